package mpiboot

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/mpi"
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
	if l < Single || l > Multiple {
		return fmt.Sprintf("ThreadLevel(%d)", int(l))
	}
	return mpi.Level(l).String()
}

// st is what mpiboot learnt when MPI started; package internal/mpi holds
// MPI itself (the funnel thread, the communicators, the deadline).
var st = struct {
	mu        sync.Mutex
	world     *Comm // the duplicate of MPI_COMM_WORLD; nil before Init/Join and after Finalize
	level     ThreadLevel
	rank      int
	size      int
	localRank int
	localSize int
}{rank: -1}

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
	level, err := mpi.Init(mpi.Level(required))
	return start(true, level, err)
}

// Join attaches mpiboot to an MPI that the application already initialised
// (MPI_Init_thread from C, gompi's mpi.Start, ...). Finalize then frees only
// mpiboot's own communicator and leaves MPI running. The application must have
// asked for MPI_THREAD_SERIALIZED or more, and below MPI_THREAD_MULTIPLE it must
// not call MPI while an mpiboot call or a blocking gccl call (which may probe
// MPI for progress) is running.
func Join() error {
	level, err := mpi.Join()
	return start(false, level, err)
}

// start finishes Init and Join once MPI runs (err nil): the local ranks,
// all-gathered over the world duplicate, and the launcher check.
func start(owned bool, level mpi.Level, err error) error {
	if err != nil {
		return err
	}
	w, err := adopt(mpi.World())
	if err != nil {
		return firstErr(err, mpi.Finalize()) // MPI stays started: Init and Join are refused from now on
	}
	st.mu.Lock()
	st.world, st.level = w, ThreadLevel(level)
	st.rank, st.size, st.localRank, st.localSize = w.Rank(), w.Size(), w.localRank, w.localSize
	st.mu.Unlock()
	if warn := launcherMismatch(os.LookupEnv, w.Size()); warn != "" {
		env.Logger("INIT").Warn(warn)
	}
	env.Logger("INIT").Info("mpiboot ready", "rank", w.Rank(), "size", w.Size(), "localRank", w.localRank,
		"localSize", w.localSize, "thread", ThreadLevel(level), "joined", !owned)
	return nil
}

// Finalize frees mpiboot's communicator and, when Init started MPI, calls
// MPI_Finalize. Calls after it fail with gccl.ErrInvalidUsage. Safe to call twice.
func Finalize() error {
	st.mu.Lock()
	st.world = nil
	st.mu.Unlock()
	return mpi.Finalize()
}

// Abort ends every process of the job with MPI_Abort(MPI_COMM_WORLD, code).
// It is for fatal errors; it returns only if MPI could not abort.
func Abort(code int) error { return mpi.Abort(code) }

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
func SetTimeout(d time.Duration) error { return mpi.SetTimeout(d) }

// world returns mpiboot's duplicate of MPI_COMM_WORLD.
func world() (*Comm, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.world == nil {
		return nil, mpi.ErrNotRunning
	}
	return st.world, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
