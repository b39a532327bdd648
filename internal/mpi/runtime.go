package mpi

import (
	"fmt"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/mpi/funnel"
)

// Level is an MPI thread-support level (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE).
type Level int

// The MPI thread-support levels, weakest first.
const (
	Single Level = iota
	Funneled
	Serialized
	Multiple
)

func (l Level) String() string {
	switch l {
	case Single:
		return "MPI_THREAD_SINGLE"
	case Funneled:
		return "MPI_THREAD_FUNNELED"
	case Serialized:
		return "MPI_THREAD_SERIALIZED"
	case Multiple:
		return "MPI_THREAD_MULTIPLE"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// rt is the process's MPI: MPI itself is one per process.
var rt struct {
	mu      sync.Mutex
	exec    *funnel.Executor   // nil before Init/Join and after Finalize
	world   *Comm              // the duplicate of MPI_COMM_WORLD, probed for progress
	comms   map[*Comm]struct{} // the other tracked duplicates, freed by Finalize
	unhook  func()             // removes the progress hook
	owned   bool               // Init started MPI, so Finalize ends it
	timeout time.Duration      // 0: GCCL_TIMEOUT (default five minutes)
	used    bool               // Init or Join ran once; MPI cannot start twice
}

// Locks, in the order they are taken:
//   - live is held shared by every MPI operation in flight and exclusively by
//     start and Finalize, so no communicator goes away under a call;
//   - a Comm's mu lets one call of it run at a time;
//   - collMu lets one of Collectives' calls run at a time in this process,
//     whichever Collectives it is on;
//   - rt.mu guards rt.
var (
	live   sync.RWMutex
	collMu sync.Mutex
)

// ErrNotRunning is what every call returns before Init or Join and after Finalize.
var ErrNotRunning = gccl.Errorf(gccl.InvalidUsage, "mpi", "MPI is not available: mpiboot was finalised (or never initialised); call mpiboot.Init or mpiboot.Join first")

// Init starts MPI requesting the given thread level, on the funnel thread,
// and duplicates MPI_COMM_WORLD (World). It returns the level MPI granted;
// below Multiple every MPI call of this package goes through the funnel.
func Init(required Level) (Level, error) {
	return start(true, func() (Level, error) {
		on, err := cInitialized()
		if err == nil && on {
			err = gccl.Errorf(gccl.InvalidUsage, "mpi", "MPI is already initialised by the application; use mpiboot.Join instead of Init")
		}
		if err != nil {
			return Single, err
		}
		return cInitThread(required)
	})
}

// Join attaches to an MPI that the application initialised, which must allow
// calls from other threads than its main one (MPI_THREAD_SERIALIZED or more,
// or the caller is on the main thread), and duplicates MPI_COMM_WORLD.
func Join() (Level, error) {
	return start(false, func() (Level, error) {
		on, err := cInitialized()
		if err == nil && !on {
			err = gccl.Errorf(gccl.InvalidUsage, "mpi", "MPI is not initialised; call mpiboot.Init, or initialise MPI before mpiboot.Join")
		}
		fin, ferr := cFinalized()
		if err == nil && (ferr != nil || fin) {
			err = gccl.Errorf(gccl.InvalidUsage, "mpi", "MPI was already finalised; mpiboot.Join must come before MPI_Finalize")
		}
		if err != nil {
			return Single, err
		}
		level, err := cQueryThread()
		if err != nil || level >= Serialized {
			return level, err
		}
		if main, _ := cIsThreadMain(); !main {
			return level, gccl.Errorf(gccl.InvalidUsage, "mpi", "the application initialised MPI with %v, which allows MPI calls only from its main thread; initialise MPI with MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE (gompi: mpi.Start(true)), or let mpiboot.Init start MPI", level)
		}
		return level, nil
	})
}

// start runs the common part of Init and Join: boot MPI on the funnel
// thread, duplicate the world communicator, install the progress hook.
func start(owned bool, boot func() (Level, error)) (Level, error) {
	live.Lock()
	defer live.Unlock()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.used {
		return Single, gccl.Errorf(gccl.InvalidUsage, "mpi", "mpiboot was already initialised in this process; MPI can be started once, call Init or Join only once")
	}
	deadline := time.Now().Add(timeoutLocked())
	e := funnel.New(ErrNotRunning)
	var level Level
	var err error
	if terr := e.OnThread(func() { level, err = boot() }, deadline); terr != nil {
		rt.used = true
		return Single, terr // the funnel stays blocked in MPI's start-up; nothing more can be done
	}
	if err != nil {
		e.Stop() // nothing started: a later Init or Join may try again
		return Single, err
	}
	rt.used = true
	e.SetDirect(level == Multiple)
	rt.exec, rt.owned = e, owned
	w, err := dup(e, FromWorld, 0, deadline)
	if err != nil {
		_ = shutdown(deadline)
		return level, err
	}
	w.world = true
	rt.world, rt.comms = w, map[*Comm]struct{}{}
	rt.unhook = installProgress(owned || level == Multiple)
	return level, nil
}

// Finalize frees every tracked communicator and, when Init started MPI,
// calls MPI_Finalize. Calls after it fail with ErrNotRunning. Safe to call twice.
func Finalize() error {
	live.Lock()
	defer live.Unlock()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.exec == nil {
		return nil
	}
	return shutdown(time.Now().Add(timeoutLocked()))
}

// shutdown removes the progress hook, frees the communicators, finalises
// MPI if owned and stops the funnel; live and rt.mu are held.
func shutdown(deadline time.Time) error {
	e := rt.exec
	rt.exec = nil
	if rt.unhook != nil {
		rt.unhook()
		rt.unhook = nil
	}
	comms := []*Comm{rt.world} // freed last: nil when start failed before it
	for c := range rt.comms {
		comms = append([]*Comm{c}, comms...)
	}
	rt.world, rt.comms = nil, nil
	var errFree, errFin error
	err := e.OnThread(func() {
		for _, c := range comms {
			if c != nil && c.h != nil {
				errFree = firstErr(errFree, cCommFree(c.h))
				c.h = nil
			}
		}
		if rt.owned {
			errFin = cFinalize()
		}
	}, deadline)
	e.Stop()
	return firstErr(err, errFree, errFin)
}

// Abort ends every process of the job with MPI_Abort(MPI_COMM_WORLD, code);
// it returns only if MPI could not abort.
func Abort(code int) error {
	var aerr error
	if err := run(func() { aerr = cAbort(code) }); err != nil {
		return err
	}
	return aerr
}

// Appnum is MPI_APPNUM, the index of this process's command in an MPMD
// launch; ok is false when the launcher did not set it.
func Appnum() (appnum int, ok bool, err error) {
	if terr := run(func() { appnum, ok, err = cAppnum() }); terr != nil {
		return 0, false, terr
	}
	return appnum, ok, err
}

// CUDAAware asks the MPI library running this job whether it takes GPU
// memory: 1 (yes), 0 (no) or -1 (it cannot tell). Open MPI answers with
// MPIX_Query_cuda_support, MPICH with MPIX_GPU_query_support.
func CUDAAware() (int, error) {
	v := -1
	err := run(func() { v = cCUDAAware() })
	return v, err
}

// run makes one short MPI call f where MPI allows it.
func run(f func()) error {
	e, _, err := acquire()
	if err != nil {
		return err
	}
	defer live.RUnlock()
	return e.Do(f)
}

// SetTimeout sets the deadline of every later MPI wait (d > 0). Until it is
// called the deadline is GCCL_TIMEOUT (five minutes by default).
func SetTimeout(d time.Duration) error {
	if d <= 0 {
		return gccl.Errorf(gccl.InvalidArgument, "timeout", "timeout %v must be positive", d)
	}
	rt.mu.Lock()
	rt.timeout = d
	rt.mu.Unlock()
	return nil
}

// Timeout is how long one MPI wait may take: SetTimeout's, else GCCL_TIMEOUT.
func Timeout() time.Duration {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return timeoutLocked()
}

func timeoutLocked() time.Duration {
	if rt.timeout > 0 {
		return rt.timeout
	}
	return env.Get().Timeout
}

// acquire takes live shared and returns the executor and the deadline of an
// operation starting now; the caller must live.RUnlock() when err is nil.
func acquire() (*funnel.Executor, time.Time, error) {
	live.RLock()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.exec == nil {
		live.RUnlock()
		return nil, time.Time{}, ErrNotRunning
	}
	return rt.exec, time.Now().Add(timeoutLocked()), nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
