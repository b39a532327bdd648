package wait

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/gccl/gccl"
)

// DefaultTimeout bounds a wait whose context carries no deadline and whose
// caller configured none.
const DefaultTimeout = 5 * time.Minute

// Back-off schedule of a Poller.
const (
	spinIters  = 64                     // busy polls before yielding
	yieldIters = 64                     // runtime.Gosched polls before sleeping
	firstSleep = 5 * time.Microsecond   // first sleep
	maxSleep   = 500 * time.Microsecond // longest sleep
	liveEvery  = 10 * time.Millisecond  // how often the peer liveness check runs
)

// Deadline returns ctx's deadline, or now+timeout (DefaultTimeout when
// timeout <= 0) when ctx has none.
func Deadline(ctx context.Context, timeout time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return time.Now().Add(timeout)
}

// CtxErr turns the end of a wait into a gccl error: gccl.ErrTimeout when ctx
// expired or was cancelled, or when the deadline passed. what names the wait;
// a nil ctx is one that never ends.
func CtxErr(ctx context.Context, deadline time.Time, what string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.Canceled) {
			return gccl.Errorf(gccl.TimeoutError, what, "cancelled while waiting: %w", err)
		}
		return gccl.Errorf(gccl.TimeoutError, what, "deadline expired while waiting; raise the timeout or check the peer: %w", err)
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return gccl.Errorf(gccl.TimeoutError, what, "deadline expired while waiting; raise the timeout or check the peer")
	}
	return nil
}

// Poller waits for a condition polled by its caller: it spins briefly, then
// yields with runtime.Gosched, then sleeps for growing short intervals. It
// checks the context, the deadline and (in the sleeping phase, every few
// milliseconds) the peer's liveness. The zero value of every field but
// Deadline (or Ctx) is a sensible default; a Poller with neither would wait
// forever, so Pause then ends the wait after DefaultTimeout.
type Poller struct {
	Ctx      context.Context // nil: only Deadline ends the wait
	Deadline time.Time
	What     string       // names the wait in errors
	Alive    func() error // optional; returns an error once the peer is gone

	// SpinFor keeps the poller yielding instead of sleeping until this long
	// after the first Pause: for waits whose wake-up latency matters more
	// than a core (0: only the short spin and yield phases).
	SpinFor time.Duration
	// MaxSleep caps the sleeps (0: 500µs).
	MaxSleep time.Duration

	n        int
	sleep    time.Duration
	start    time.Time
	lastLive time.Time
}

// Pause waits a little. It returns a non-nil error when the wait must end.
func (p *Poller) Pause() error {
	p.n++
	if p.n == 1 {
		p.start = time.Now()
		if p.Deadline.IsZero() && p.Ctx == nil {
			p.Deadline = p.start.Add(DefaultTimeout)
		}
	}
	switch {
	case p.n < spinIters:
		if p.n%16 != 0 {
			return nil
		}
	case p.n < spinIters+yieldIters || p.SpinFor > 0 && time.Since(p.start) < p.SpinFor:
		runtime.Gosched()
	default:
		if err := p.doze(); err != nil {
			return err
		}
	}
	return CtxErr(p.Ctx, p.Deadline, p.What)
}

// doze sleeps, doubling the sleep up to its cap, and checks liveness every
// liveEvery.
func (p *Poller) doze() error {
	if p.sleep == 0 {
		p.sleep = firstSleep
	}
	time.Sleep(p.sleep)
	limit := p.MaxSleep
	if limit <= 0 {
		limit = maxSleep
	}
	p.sleep = min(2*p.sleep, limit)
	if p.Alive != nil {
		if now := time.Now(); now.Sub(p.lastLive) >= liveEvery {
			p.lastLive = now
			return p.Alive()
		}
	}
	return nil
}

// Reset starts the back-off schedule again, after the condition was met.
func (p *Poller) Reset() { p.n, p.sleep = 0, 0 }
