// Package wait holds the deadline and back-off helpers shared by the
// transports: every wait in gccl has a deadline, and on machines with few
// cores a waiter must give the CPU back quickly instead of spinning.
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
// expired or was cancelled, or when the deadline passed. what names the wait.
func CtxErr(ctx context.Context, deadline time.Time, what string) error {
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
// milliseconds) the peer's liveness.
type Poller struct {
	Ctx      context.Context
	Deadline time.Time
	What     string       // names the wait in errors
	Alive    func() error // optional; returns an error once the peer is gone

	n        int
	sleep    time.Duration
	lastLive time.Time
}

// Pause waits a little. It returns a non-nil error when the wait must end.
func (p *Poller) Pause() error {
	p.n++
	switch {
	case p.n < spinIters:
		if p.n%16 != 0 {
			return nil
		}
	case p.n < spinIters+yieldIters:
		runtime.Gosched()
	default:
		if p.sleep == 0 {
			p.sleep = firstSleep
		}
		time.Sleep(p.sleep)
		p.sleep = min(2*p.sleep, maxSleep)
		if p.Alive != nil {
			if now := time.Now(); now.Sub(p.lastLive) >= liveEvery {
				p.lastLive = now
				if err := p.Alive(); err != nil {
					return err
				}
			}
		}
	}
	return CtxErr(p.Ctx, p.Deadline, p.What)
}

// Reset starts the back-off schedule again, after the condition was met.
func (p *Poller) Reset() { p.n, p.sleep = 0, 0 }
