package mpiboot

import (
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/mpi"
)

// Comm is mpiboot's private duplicate of an MPI communicator that the
// application owns (MPI_COMM_WORLD, a communicator from MPI_Comm_split, one
// handed over from C or Fortran): gccl's bootstrap traffic runs on the
// duplicate, apart from the application's messages, with errors returned
// rather than fatal. Over it, rank 0 makes the unique ID and broadcasts it
// (ShareUniqueID), local ranks come from host hashes all-gathered over it,
// and NewComm creates a gccl communicator of the same ranks in the same
// order. Free it before Finalize, or Finalize frees it.
type Comm struct {
	mu        sync.Mutex // one call at a time: Bcast and Allgather are two MPI collectives each
	m         *mpi.Comm
	localRank int
	localSize int
}

// FromWorld duplicates MPI_COMM_WORLD: a communicator of every process for
// the application's own MPI traffic (Isend, Irecv), apart from gccl's.
func FromWorld() (*Comm, error) { return adopt(mpi.Dup(mpi.FromWorld, 0)) }

// FromFortran duplicates the application's communicator given as a Fortran
// handle, the MPI_Fint that MPI_Comm_c2f returns (and what mpi4py's
// Comm.py2f and Fortran codes pass). It is a collective over that
// communicator: every member must call it.
func FromFortran(f int) (*Comm, error) { return adopt(mpi.Dup(mpi.FromFortran, uintptr(f))) }

// FromHandle duplicates the application's communicator given as its raw C
// handle, converted to an integer: (uintptr_t)comm in C, where MPI_Comm is
// a pointer in Open MPI and an int in MPICH. The handle must be a valid
// communicator of the MPI this package links; prefer FromFortran, which MPI
// checks. A collective over that communicator.
func FromHandle(h uintptr) (*Comm, error) { return adopt(mpi.Dup(mpi.FromHandle, h)) }

// adopt makes a Comm of a new duplicate (none when m is nil: a negative
// colour in Split) and learns its local ranks, a collective over it. When
// that fails the duplicate is left to Finalize: MPI may still be using it.
func adopt(m *mpi.Comm, err error) (*Comm, error) {
	if err != nil || m == nil {
		return nil, err
	}
	c := &Comm{m: m}
	if c.localRank, c.localSize, err = learnLocal(m); err != nil {
		return nil, err
	}
	return c, nil
}

// Split is MPI_Comm_split over c: processes passing the same colour form one
// new communicator, ranked by key (ties by rank in c); a negative colour
// gives (nil, nil). A collective over c. MPI_Comm_split has no nonblocking
// form, so past the deadline Split returns gccl.ErrTimeout while MPI stays
// blocked; the job should then be aborted.
func (c *Comm) Split(color, key int) (*Comm, error) {
	var out *mpi.Comm
	err := c.use(func(m *mpi.Comm) (err error) {
		out, err = m.Split(color, key)
		return err
	})
	return adopt(out, err)
}

// SplitWorld splits the processes of the job (Split of mpiboot's world communicator).
func SplitWorld(color, key int) (*Comm, error) {
	w, err := world()
	if err != nil {
		return nil, err
	}
	return w.Split(color, key)
}

// Appnum is MPI_APPNUM: the index of this process's command in an MPMD
// launch (mpirun -np 2 a : -np 3 b gives 0 to a's processes, 1 to b's).
// ok is false when the launcher did not set it.
func Appnum() (appnum int, ok bool, err error) { return mpi.Appnum() }

// SplitApp splits the job by MPI_APPNUM: each command of an MPMD launch gets
// its own communicator, ranked as in MPI_COMM_WORLD. A job without
// MPI_APPNUM stays whole (every process gets colour 0).
func SplitApp() (*Comm, error) {
	app, _, err := Appnum()
	if err != nil {
		return nil, err
	}
	rank, _ := World()
	return SplitWorld(app, rank)
}

// Rank is this process's rank in c; Size the number of processes of c.
func (c *Comm) Rank() int { return c.m.Rank() }

// Size is the number of processes of c.
func (c *Comm) Size() int { return c.m.Size() }

// LocalRank is this process's rank among the processes of c on its host:
// the default device of NewComm.
func (c *Comm) LocalRank() int { return c.localRank }

// LocalSize is how many processes of c run on this host.
func (c *Comm) LocalSize() int { return c.localSize }

// Fortran is c's Fortran handle (MPI_Comm_c2f), and Handle its raw C
// handle: with either the application can use mpiboot's duplicate (a
// communicator made by Split, say) with its own MPI calls. 0 once freed.
func (c *Comm) Fortran() int {
	var f int
	_ = c.use(func(m *mpi.Comm) error { f = m.Fortran(); return nil })
	return f
}

// Handle is c's raw MPI_Comm converted to an integer (see Fortran).
func (c *Comm) Handle() uintptr {
	var h uintptr
	_ = c.use(func(m *mpi.Comm) error { h = m.Handle(); return nil })
	return h
}

// Free frees the duplicate (not the application's communicator). Safe on
// nil, twice and after Finalize; the communicator of the whole job
// (mpiboot's own) is freed by Finalize only.
func (c *Comm) Free() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.Free()
}

// use runs f with no other call of c running.
func (c *Comm) use(f func(m *mpi.Comm) error) error {
	if c == nil {
		return gccl.Errorf(gccl.InvalidArgument, "comm", "nil *mpiboot.Comm")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return f(c.m)
}
