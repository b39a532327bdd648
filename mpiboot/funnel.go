package mpiboot

import (
	"runtime"
	"sync"
	"time"

	"github.com/gccl/gccl"
)

// executor runs MPI calls on the right OS thread. Go moves goroutines between
// OS threads, while MPI below MPI_THREAD_MULTIPLE restricts which threads may
// call it. So mpiboot owns one goroutine locked to its OS thread for the whole
// life of MPI (the funnel): MPI_Init_thread and MPI_Finalize always run there,
// and every other call runs there too unless MPI granted MPI_THREAD_MULTIPLE,
// in which case calls run directly on the caller's thread.
type executor struct {
	mu      sync.Mutex // guards direct and stopped
	direct  bool
	stopped bool
	calls   chan func()
	done    chan struct{} // closed when the funnel goroutine has exited
}

// newExecutor starts the funnel goroutine.
func newExecutor() *executor {
	e := &executor{calls: make(chan func()), done: make(chan struct{})}
	go e.loop()
	return e
}

func (e *executor) loop() {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	defer close(e.done)
	for f := range e.calls {
		f()
	}
}

// setDirect chooses direct calls (MPI_THREAD_MULTIPLE) or funnelled calls.
func (e *executor) setDirect(direct bool) {
	e.mu.Lock()
	e.direct = direct
	e.mu.Unlock()
}

// do runs f where MPI allows it and returns when f has returned.
func (e *executor) do(f func()) error {
	e.mu.Lock()
	direct, stopped := e.direct, e.stopped
	e.mu.Unlock()
	if stopped {
		return errFinalized
	}
	if direct {
		f()
		return nil
	}
	return e.onThread(f, time.Time{})
}

// onThread runs f on the funnel thread. With a non-zero deadline it gives up
// waiting at the deadline with gccl.ErrTimeout; f still runs to its end.
func (e *executor) onThread(f func(), deadline time.Time) error {
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
		return errFinalized
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

// stop ends the funnel goroutine once every handed-over call has run; later
// calls fail with errFinalized. Safe to call twice.
func (e *executor) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stopped {
		e.stopped = true
		close(e.calls)
	}
}

var errFinalized = gccl.Errorf(gccl.InvalidUsage, "mpi", "MPI is not available: mpiboot was finalised (or never initialised); call mpiboot.Init or mpiboot.Join first")
