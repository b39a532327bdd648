package mpiboot

import (
	"sync"
	"time"

	"github.com/gccl/gccl"
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
	mu        sync.Mutex // one collective at a time; guards h
	h         handle     // nil once freed
	world     bool       // mpiboot's own duplicate of MPI_COMM_WORLD
	rank      int
	size      int
	localRank int
	localSize int
}

// How cIdup names the application's communicator (the C side agrees).
const (
	fromWorld   = 0 // MPI_COMM_WORLD
	fromFortran = 1 // an MPI_Fint from MPI_Comm_c2f
	fromHandle  = 2 // a raw MPI_Comm
)

// FromWorld duplicates MPI_COMM_WORLD: a communicator of every process for
// the application's own MPI traffic (Isend, Irecv), apart from gccl's.
func FromWorld() (*Comm, error) { return dupOf(fromWorld, 0) }

// FromFortran duplicates the application's communicator given as a Fortran
// handle, the MPI_Fint that MPI_Comm_c2f returns (and what mpi4py's
// Comm.py2f and Fortran codes pass). It is a collective over that
// communicator: every member must call it.
func FromFortran(f int) (*Comm, error) { return dupOf(fromFortran, uintptr(f)) }

// FromHandle duplicates the application's communicator given as its raw C
// handle, converted to an integer: (uintptr_t)comm in C, where MPI_Comm is
// a pointer in Open MPI and an int in MPICH. The handle must be a valid
// communicator of the MPI this package links; prefer FromFortran, which MPI
// checks. A collective over that communicator.
func FromHandle(h uintptr) (*Comm, error) { return dupOf(fromHandle, h) }

// dupOf duplicates (how, v) with MPI_Comm_idup, bounded by the deadline.
func dupOf(how int, v uintptr) (*Comm, error) {
	e, deadline, err := acquire()
	if err != nil {
		return nil, err
	}
	defer live.RUnlock()
	c, err := dup(e, how, v, deadline)
	if err == nil {
		st.track(c)
	}
	return c, err
}

func dup(e *executor, how int, v uintptr, deadline time.Time) (*Comm, error) {
	var h handle
	var r *request
	var err error
	if terr := e.do(func() { h, r, err = cIdup(how, v) }); terr != nil || err != nil {
		return nil, firstErr(terr, err)
	}
	if err := complete(e, r, deadline, "MPI_Comm_idup"); err != nil {
		return nil, err // h stays allocated: MPI may still write it
	}
	return adopt(e, h, deadline)
}

// adopt makes a Comm of a new private communicator: errors returned, rank,
// size and local ranks learnt.
func adopt(e *executor, h handle, deadline time.Time) (*Comm, error) {
	c := &Comm{h: h}
	var err error
	if terr := e.do(func() { c.rank, c.size, err = cCommReady(h) }); terr != nil || err != nil {
		return nil, firstErr(terr, err, e.do(func() { _ = cCommFree(h) }))
	}
	if c.localRank, c.localSize, err = learnLocal(e, c, deadline); err != nil {
		return nil, err
	}
	return c, nil
}

// track records c so that Finalize frees it.
func (s *state) track(c *Comm) {
	s.mu.Lock()
	s.comms[c] = struct{}{}
	s.mu.Unlock()
}

// Split is MPI_Comm_split over c: processes passing the same colour form one
// new communicator, ranked by key (ties by rank in c); a negative colour
// gives (nil, nil). A collective over c. MPI_Comm_split has no nonblocking
// form, so past the deadline Split returns gccl.ErrTimeout while MPI stays
// blocked; the job should then be aborted.
func (c *Comm) Split(color, key int) (*Comm, error) {
	var out *Comm
	err := c.use(func(e *executor, deadline time.Time) error {
		var h handle
		var err error
		if terr := blocking(e, deadline, func() { h, err = cSplit(c.h, color, key) }); terr != nil || err != nil || h == nil {
			return firstErr(terr, err)
		}
		if out, err = adopt(e, h, deadline); err == nil {
			st.track(out)
		}
		return err
	})
	return out, err
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
func Appnum() (appnum int, ok bool, err error) {
	e, _, err := acquire()
	if err != nil {
		return 0, false, err
	}
	defer live.RUnlock()
	if terr := e.do(func() { appnum, ok, err = cAppnum() }); terr != nil {
		return 0, false, terr
	}
	return appnum, ok, err
}

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
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes of c.
func (c *Comm) Size() int { return c.size }

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
	_ = c.use(func(e *executor, _ time.Time) error { return e.do(func() { f = cFortran(c.h) }) })
	return f
}

// Handle is c's raw MPI_Comm converted to an integer (see Fortran).
func (c *Comm) Handle() uintptr {
	var h uintptr
	_ = c.use(func(e *executor, _ time.Time) error { return e.do(func() { h = cRaw(c.h) }) })
	return h
}

// Free frees the duplicate (not the application's communicator). Safe on
// nil, twice and after Finalize; the communicator of the whole job
// (mpiboot's own) is freed by Finalize only.
func (c *Comm) Free() error {
	if c == nil || c.world {
		return nil
	}
	e, deadline, err := acquire()
	if err != nil {
		return nil // finalised: Finalize freed it
	}
	defer live.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return nil
	}
	st.mu.Lock()
	delete(st.comms, c)
	st.mu.Unlock()
	h := c.h
	c.h = nil
	return firstErr(blocking(e, deadline, func() { err = cCommFree(h) }), err)
}

// use runs f with c's handle valid and no other collective of c running.
func (c *Comm) use(f func(e *executor, deadline time.Time) error) error {
	if c == nil {
		return gccl.Errorf(gccl.InvalidArgument, "comm", "nil *mpiboot.Comm")
	}
	e, deadline, err := acquire()
	if err != nil {
		return err
	}
	defer live.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return gccl.Errorf(gccl.InvalidUsage, "comm", "the MPI communicator was freed (Free or Finalize); duplicate it again")
	}
	return f(e, deadline)
}

// world returns mpiboot's duplicate of MPI_COMM_WORLD.
func world() (*Comm, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.world == nil {
		return nil, errFinalized
	}
	return st.world, nil
}
