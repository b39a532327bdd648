package mpiboot

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
)

// ThreadLevel is an MPI thread-support level (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE).
type ThreadLevel int

// The MPI thread-support levels, weakest first.
const (
	Single ThreadLevel = iota
	Funneled
	Serialized
	Multiple
)

func (l ThreadLevel) String() string {
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
	return fmt.Sprintf("ThreadLevel(%d)", int(l))
}

// state is the process's MPI state: MPI itself is one per process.
type state struct {
	mu        sync.Mutex
	exec      *executor          // nil before Init/Join and after Finalize
	world     *Comm              // mpiboot's duplicate of MPI_COMM_WORLD
	comms     map[*Comm]struct{} // the other duplicates, freed by Finalize
	unhook    func()             // removes the progress hook
	owned     bool               // Init started MPI, so Finalize ends it
	level     ThreadLevel
	rank      int
	size      int
	localRank int
	localSize int
	timeout   time.Duration // 0: GCCL_TIMEOUT (default five minutes)
	used      bool          // Init or Join ran once; MPI cannot start twice
}

var st = state{rank: -1}

// Locks order mpiboot's MPI use, always taken before st.mu:
//   - live is held shared by every MPI operation in flight and exclusively by
//     start and shutdown, so no communicator goes away under a call;
//   - each Comm's mu lets one of its collectives at a time run in this
//     process, so a process never interleaves two of them (every rank must
//     still call them in the same order); collMu does the same for
//     Collectives (MPI's own collectives, the benchmark baseline).
var (
	live   sync.RWMutex
	collMu sync.Mutex
)

// Init starts MPI with MPI_THREAD_MULTIPLE requested (InitThread(Multiple)).
func Init() error { return InitThread(Multiple) }

// InitThread starts MPI requesting the given thread level, duplicates
// MPI_COMM_WORLD into mpiboot's private communicator (errors returned, never
// fatal), and learns the local rank. Whatever level MPI grants, mpiboot
// stays correct: below Multiple every MPI call is funnelled through one
// locked OS thread. Every process of the job must call it.
func InitThread(required ThreadLevel) error {
	if required < Single || required > Multiple {
		return gccl.Errorf(gccl.InvalidArgument, "required", "thread level %d is not one of Single, Funneled, Serialized, Multiple", int(required))
	}
	return start(true, func(e *executor) (ThreadLevel, error) {
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

// Join attaches mpiboot to an MPI that the application already initialised
// (MPI_Init_thread from C, gompi's mpi.Start, ...). Finalize then frees only
// mpiboot's own communicator and leaves MPI running. The application must have
// asked for MPI_THREAD_SERIALIZED or more, and below MPI_THREAD_MULTIPLE it must
// not call MPI while an mpiboot call or a blocking gccl call (which may probe
// MPI for progress) is running.
func Join() error {
	return start(false, func(e *executor) (ThreadLevel, error) {
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
// thread, duplicate the world communicator, compute local ranks.
func start(owned bool, boot func(*executor) (ThreadLevel, error)) error {
	live.Lock()
	defer live.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.used {
		return gccl.Errorf(gccl.InvalidUsage, "mpi", "mpiboot was already initialised in this process; MPI can be started once, call Init or Join only once")
	}
	deadline := time.Now().Add(st.timeoutLocked())
	e := newExecutor()
	var level ThreadLevel
	var err error
	if terr := e.onThread(func() { level, err = boot(e) }, deadline); terr != nil {
		st.used = true
		return terr // the funnel stays blocked in MPI's start-up; nothing more can be done
	}
	if err != nil {
		e.stop() // nothing started: a later Init or Join may try again
		return err
	}
	st.used = true
	e.setDirect(level == Multiple)
	st.exec, st.owned, st.level = e, owned, level
	w, err := dup(e, fromWorld, 0, deadline)
	if err != nil {
		st.shutdown(deadline)
		return err
	}
	w.world = true
	st.world, st.comms = w, map[*Comm]struct{}{}
	st.rank, st.size, st.localRank, st.localSize = w.rank, w.size, w.localRank, w.localSize
	st.unhook = installProgress(owned || level == Multiple)
	if w := launcherMismatch(os.LookupEnv, st.size); w != "" {
		env.Logger("INIT").Warn(w)
	}
	env.Logger("INIT").Info("mpiboot ready", "rank", st.rank, "size", st.size, "localRank", st.localRank,
		"localSize", st.localSize, "thread", level, "joined", !owned)
	return nil
}

// Finalize frees mpiboot's communicator and, when Init started MPI, calls
// MPI_Finalize. Calls after it fail with gccl.ErrInvalidUsage. Safe to call twice.
func Finalize() error {
	live.Lock()
	defer live.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.exec == nil {
		return nil
	}
	return st.shutdown(time.Now().Add(st.timeoutLocked()))
}

// shutdown removes the progress hook, frees the communicators, finalises
// MPI if owned and stops the funnel.
func (s *state) shutdown(deadline time.Time) error {
	e := s.exec
	s.exec = nil
	if s.unhook != nil {
		s.unhook()
		s.unhook = nil
	}
	comms := []*Comm{s.world} // freed last: nil when start failed before it
	for c := range s.comms {
		comms = append([]*Comm{c}, comms...)
	}
	s.world, s.comms = nil, nil
	var errFree, errFin error
	err := e.onThread(func() {
		for _, c := range comms {
			if c != nil && c.h != nil {
				errFree = firstErr(errFree, cCommFree(c.h))
				c.h = nil
			}
		}
		if s.owned {
			errFin = cFinalize()
		}
	}, deadline)
	e.stop()
	return firstErr(err, errFree, errFin)
}

// Abort ends every process of the job with MPI_Abort(MPI_COMM_WORLD, code).
// It is for fatal errors; it returns only if MPI could not abort.
func Abort(code int) error {
	e, _, err := acquire()
	if err != nil {
		return err
	}
	defer live.RUnlock()
	var aerr error
	if err := e.do(func() { aerr = cAbort(code) }); err != nil {
		return err
	}
	return aerr
}

// World returns this process's rank and the number of processes. Before
// Init/Join it returns (-1, 0).
func World() (rank, size int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.rank, st.size
}

// Level returns the thread level MPI granted (Single before Init/Join).
func Level() ThreadLevel {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.level
}

// SetTimeout sets the deadline of every later MPI wait (d > 0). Until it is
// called the deadline is GCCL_TIMEOUT (five minutes by default).
func SetTimeout(d time.Duration) error {
	if d <= 0 {
		return gccl.Errorf(gccl.InvalidArgument, "timeout", "timeout %v must be positive", d)
	}
	st.mu.Lock()
	st.timeout = d
	st.mu.Unlock()
	return nil
}

// acquire takes live shared and returns the executor and the deadline of an
// operation starting now; the caller must live.RUnlock() when err is nil.
func acquire() (*executor, time.Time, error) {
	live.RLock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.exec == nil {
		live.RUnlock()
		return nil, time.Time{}, errFinalized
	}
	return st.exec, time.Now().Add(st.timeoutLocked()), nil
}

// timeoutLocked is the deadline of one wait: SetTimeout's, else GCCL_TIMEOUT.
func (s *state) timeoutLocked() time.Duration {
	if s.timeout > 0 {
		return s.timeout
	}
	return env.Get().Timeout
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
