package net

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/internal/wait"
)

// InFlight is how many requests one connection may have posted at once
// (Properties.InFlight); a further Isend or Irecv is told to retry.
const InFlight = 32

// Request states.
const (
	reqIdle      = iota // in the free list
	reqPosted           // handed out, not done
	reqFinishing        // a finisher is writing n and err
	reqDone             // n and err are final; Test or Wait spends it
)

// request is a posted transfer. A connection owns InFlight of them and
// reuses them (NCCL's fixed request array), so a transfer allocates
// nothing; Test or Wait reporting done returns it to the free list.
type request struct {
	free    chan *request
	timeout time.Duration
	state   atomic.Uint32
	pending atomic.Int32 // parts (control frame, pieces) not yet done
	n       int
	err     error
	wake    chan struct{} // cap 1: a finish signals it
	timer   *time.Timer

	buf   []byte           // the transfer's bytes (the region)
	total int              // the transfer's length
	tag   uint32           // the transfer's tag
	hdr   [HeaderSize]byte // the control frame of a send
	rest  [2][]byte        // what of the control frame the fast path did not write
	what  string           // names the request in errors
	// progress reads what has arrived for the connection's receives,
	// without blocking, up to the end of this request's own transfer
	// (RecvComm.progress); nil for sends.
	progress func(*request)
	// mark is a receive's connection's SO_RCVLOWAT, raised by spin and
	// lowered before Wait sleeps on a frame (lowMark); nil for sends and
	// where the socket has no raw descriptor.
	mark *lowMark
	// pieces is set on a send cut into pieces, and on a receive once it is
	// matched with such a transfer: the helpers move it on the data
	// sockets, and the control socket holds nothing more of it, so its
	// Test and Wait stop reading there (they would only contend with the
	// reader goroutine) and Wait does not spin.
	pieces atomic.Bool
	_      [0]func() // not comparable
}

// newRequests makes n requests and a free list holding them.
func newRequests(n int, timeout time.Duration, what string) (chan *request, []*request) {
	free := make(chan *request, n)
	all := make([]*request, n)
	for i := range all {
		all[i] = &request{free: free, timeout: timeout, wake: make(chan struct{}, 1), what: what}
		free <- all[i]
	}
	return free, all
}

// take returns an idle request, posted, or nil when all are in flight.
func take(free chan *request) *request {
	select {
	case r := <-free:
		select { // a signal left over from its last use
		case <-r.wake:
		default:
		}
		r.n, r.err = 0, nil
		r.pieces.Store(false)
		r.state.Store(reqPosted)
		return r
	default:
		return nil
	}
}

// finish ends the request with n bytes and err; the first finish wins.
func (r *request) finish(n int, err error) {
	if !r.state.CompareAndSwap(reqPosted, reqFinishing) {
		return
	}
	r.n, r.err = n, err
	r.state.Store(reqDone)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// partDone counts one part done and finishes the request after the last.
func (r *request) partDone() {
	if r.pending.Add(-1) == 0 {
		r.finish(r.total, nil)
	}
}

// Test reports whether the transfer is done; done, the request is spent.
// A request that succeeded goes back to the free list: nothing else holds
// it by then (its last part finished it).
func (r *request) Test() (bool, int, error) {
	if r.state.Load() != reqDone && r.progress != nil && !r.pieces.Load() {
		r.progress(r)
	}
	if r.state.Load() != reqDone {
		return false, 0, nil
	}
	if r.err != nil {
		// The connection broke: its goroutines may still hold the request,
		// so it is never reused (the connection takes no more anyway).
		return true, 0, r.err
	}
	n := r.n
	r.buf, r.rest = nil, [2][]byte{}
	r.state.Store(reqIdle)
	r.free <- r
	return true, n, nil
}

// Wait blocks until the transfer is done (then the request is spent), or
// until ctx ends or, without a deadline in ctx, the connection's timeout
// passes (gccl.ErrTimeout; the request stays posted). It polls first, for
// the host's spin time (futex.SpinTime: none where the host's ranks
// outnumber half its CPUs under GCCL_HOST_SPIN=auto), reading a receive's
// transfer itself, and only then sleeps until a finish wakes it; a
// transfer in pieces is not polled (spin).
//
// A receive's Wait lowers its connection's control socket's SO_RCVLOWAT
// before it sleeps, if a spin left it raised (lowMark.sleeping), so that
// the reader goroutine is woken by the frames, buffered already or yet to
// come, that the sleeper waits for: its own, unless it is matched with a
// transfer in pieces already (then the helpers alone finish it), and those
// after it, whose reading ahead lets the helpers start on the next
// transfer's pieces while the caller sleeps on this one's.
func (r *request) Wait(ctx context.Context) (int, error) {
	if done, n, err := r.Test(); done {
		return n, err
	}
	if r.spin(ctx) {
		return r.spent()
	}
	if r.mark != nil {
		r.mark.sleeping()
		defer r.mark.awake()
	}
	deadline := wait.Deadline(ctx, r.timeout)
	var expired <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		if r.timer == nil {
			r.timer = time.NewTimer(time.Until(deadline))
		} else {
			r.timer.Reset(time.Until(deadline))
		}
		expired = r.timer.C
	}
	for {
		select {
		case <-r.wake:
		case <-ctx.Done():
			r.stopTimer(expired)
			return 0, wait.CtxErr(ctx, deadline, r.what)
		case <-expired:
			return 0, gccl.Errorf(gccl.TimeoutError, r.what, "deadline expired while waiting; raise the timeout or check the peer")
		}
		if r.state.Load() == reqDone {
			r.stopTimer(expired) // before Test spends the request (and another Wait may reuse the timer)
			_, n, err := r.Test()
			return n, err
		}
	}
}

// spin polls the request for the spin time; true once it is done. Only a
// transfer of one control frame (at most MaxInline bytes) is polled: one
// cut into pieces (a send's, or a receive's once matched with one) takes
// longer than the spin, and a polling core would compete with the helpers
// that move it and with the caller's other goroutines (the host backend's
// sender goroutine waits so on every long message), so it sleeps at once.
// Every poll yields the P (runtime.Gosched): a goroutine the caller has
// just readied waits in the caller's P (runnext), where other Ps do not
// steal it at once, and the transfer often depends on it: the host
// backend's sender goroutine, given a long message just before its runner
// waits for the peer's answer to it, or the writer goroutine that finishes
// a frame the fast path did not. Without the yield such a wait spun out
// its spin time before that goroutine ran (AllReduce of 256 KiB, 2 ranks
// on 2 simulated hosts of 16 CPUs: 1.3x the time of sleeping at once;
// yielding every 16th poll: 1.1x).
//
// A receive that spins raises its connection's control socket's
// SO_RCVLOWAT, unless it is raised already or a goroutine sleeps on the
// socket's frames (lowMark.spinning), and leaves it raised when it is
// done: the frames it and the next spinning Waits poll for then wake
// neither the reader goroutine nor the thread in Go's network poller, a
// wake-up the sender's write would pay for, and back-to-back Waits pay no
// system call for the mark. A Wait that goes to sleep lowers it (Wait).
func (r *request) spin(ctx context.Context) bool {
	d := futex.SpinTime()
	if d <= 0 {
		return false
	}
	if r.mark != nil && !r.pieces.Load() {
		r.mark.spinning()
	}
	start := time.Now()
	for i := 1; ; i++ {
		if r.pieces.Load() {
			return r.state.Load() == reqDone
		}
		if r.progress != nil {
			r.progress(r)
		}
		if r.state.Load() == reqDone {
			return true
		}
		if i%16 == 0 && (time.Since(start) >= d || ctx.Err() != nil) {
			return false
		}
		runtime.Gosched()
	}
}

// spent spends a request that is done: Test's results.
func (r *request) spent() (int, error) {
	_, n, err := r.Test()
	return n, err
}

func (r *request) stopTimer(expired <-chan time.Time) {
	if expired != nil {
		r.timer.Stop()
	}
}

// doneRequest is a request that is done from the start (Flush of host memory).
type doneRequest struct{}

func (doneRequest) Test() (bool, int, error)          { return true, 0, nil }
func (doneRequest) Wait(context.Context) (int, error) { return 0, nil }
