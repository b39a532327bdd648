// Package funnel runs MPI's calls on the OS thread MPI allows. Go moves
// goroutines between OS threads, while MPI below MPI_THREAD_MULTIPLE
// restricts which threads may call it; so package internal/mpi owns one
// Executor for the whole life of MPI: a goroutine locked to its OS thread
// (the funnel), where MPI_Init_thread and MPI_Finalize always run and every
// other call runs too unless MPI granted MPI_THREAD_MULTIPLE, in which case
// calls run directly on the caller's thread. Every hand-over can be bounded
// by a deadline, so that a call stuck in MPI turns into gccl.ErrTimeout for
// its caller instead of a hang. The package knows nothing of MPI itself and
// is tested without it.
package funnel

import (
	"runtime"
	"sync"
	"time"

	"github.com/gccl/gccl"
)

// Executor runs calls on the funnel thread, or directly (SetDirect).
type Executor struct {
	mu      sync.Mutex // guards direct and stopped
	direct  bool
	stopped bool
	calls   chan func()
	done    chan struct{} // closed when the funnel goroutine has exited
	errStop error         // what calls after Stop return
}

// New starts the funnel goroutine; after Stop, calls return errStop.
func New(errStop error) *Executor {
	e := &Executor{calls: make(chan func()), done: make(chan struct{}), errStop: errStop}
	go e.loop()
	return e
}

func (e *Executor) loop() {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	defer close(e.done)
	for f := range e.calls {
		f()
	}
}

// SetDirect chooses direct calls (MPI_THREAD_MULTIPLE) or funnelled calls.
func (e *Executor) SetDirect(direct bool) {
	e.mu.Lock()
	e.direct = direct
	e.mu.Unlock()
}

// Do runs f where MPI allows it and returns when f has returned.
func (e *Executor) Do(f func()) error {
	e.mu.Lock()
	direct, stopped := e.direct, e.stopped
	e.mu.Unlock()
	if stopped {
		return e.errStop
	}
	if direct {
		f()
		return nil
	}
	return e.OnThread(f, time.Time{})
}

// OnThread runs f on the funnel thread. With a non-zero deadline it gives up
// waiting at the deadline with gccl.ErrTimeout; f still runs to its end.
func (e *Executor) OnThread(f func(), deadline time.Time) error {
	ran := make(chan struct{})
	call := func() { defer close(ran); f() }
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return e.errStop
	}
	// Hold mu while handing over so that stop cannot close calls under us; the
	// funnel goroutine never takes mu, so the hand-over always completes
	// unless the funnel is blocked in a long MPI call, which the deadline bounds.
	select {
	case e.calls <- call:
	case <-timeout:
		e.mu.Unlock()
		return gccl.Errorf(gccl.TimeoutError, "mpi", "the MPI thread stayed busy past the deadline; another MPI call is blocked, abort the job")
	}
	e.mu.Unlock()
	select {
	case <-ran:
		return nil
	case <-timeout:
		return gccl.Errorf(gccl.TimeoutError, "mpi", "an MPI call did not return before the deadline; a peer is missing or stuck, abort the job")
	}
}

// Blocking runs f, which blocks in MPI, where MPI allows it: on the funnel
// thread, or (MPI_THREAD_MULTIPLE) on a goroutine of its own, so that the
// caller can give up at the deadline with gccl.ErrTimeout.
func (e *Executor) Blocking(deadline time.Time, f func()) error {
	e.mu.Lock()
	direct := e.direct
	e.mu.Unlock()
	if !direct {
		return e.OnThread(f, deadline)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return gccl.Errorf(gccl.TimeoutError, "mpi", "an MPI collective did not return before the deadline; a process of the job did not take part, abort the job")
	}
}

// Stop ends the funnel goroutine once every handed-over call has run; later
// calls fail with New's errStop. Safe to call twice.
func (e *Executor) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stopped {
		e.stopped = true
		close(e.calls)
	}
}
