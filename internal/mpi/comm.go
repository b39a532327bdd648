package mpi

import (
	"math"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/mpi/funnel"
)

// MaxCount is the largest count one MPI call takes (a C int).
const MaxCount = math.MaxInt32

// Comm is a private duplicate of an MPI communicator, in C memory, with
// MPI_ERRORS_RETURN set so that MPI errors come back as *gccl.Error values.
// Finalize frees it if Free did not.
type Comm struct {
	mu    sync.Mutex // one call at a time; guards h
	h     handle     // nil once freed
	world bool       // World's communicator, freed by Finalize only
	rank  int
	size  int
}

// From names the communicator of the application that Dup duplicates (the
// values are gccl_mpi_idup's).
type From int

// The communicators Dup takes.
const (
	FromWorld   From = iota // MPI_COMM_WORLD
	FromFortran             // an MPI_Fint from MPI_Comm_c2f
	FromHandle              // a raw MPI_Comm converted to an integer
)

// World returns the duplicate of MPI_COMM_WORLD that Init or Join made.
func World() (*Comm, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.world == nil {
		return nil, ErrNotRunning
	}
	return rt.world, nil
}

// Dup duplicates the application's communicator (from, v) with
// MPI_Comm_idup, polled against the deadline. A collective over that
// communicator.
func Dup(from From, v uintptr) (*Comm, error) {
	e, deadline, err := acquire()
	if err != nil {
		return nil, err
	}
	defer live.RUnlock()
	c, err := dup(e, from, v, deadline)
	if err == nil {
		track(c)
	}
	return c, err
}

// dup is Dup with live held, without tracking the new communicator.
func dup(e *funnel.Executor, from From, v uintptr, deadline time.Time) (*Comm, error) {
	var h handle
	_, err := await(e, deadline, "MPI_Comm_idup", func() (r *request, err error) {
		h, r, err = cIdup(from, v)
		return r, err
	})
	if err != nil {
		return nil, err // h stays allocated: MPI may still write it
	}
	return adopt(e, h)
}

// adopt makes a Comm of a new communicator: errors returned, rank and size read.
func adopt(e *funnel.Executor, h handle) (*Comm, error) {
	c := &Comm{h: h}
	var err error
	if terr := e.Do(func() { c.rank, c.size, err = cCommReady(h) }); terr != nil || err != nil {
		return nil, firstErr(terr, err, e.Do(func() { _ = cCommFree(h) }))
	}
	return c, nil
}

// track records c so that Finalize frees it.
func track(c *Comm) {
	rt.mu.Lock()
	rt.comms[c] = struct{}{}
	rt.mu.Unlock()
}

// Split is MPI_Comm_split over c: processes passing the same colour form one
// new communicator, ranked by key (ties by rank in c); a negative colour
// gives (nil, nil). MPI_Comm_split has no nonblocking form, so past the
// deadline Split returns gccl.ErrTimeout while MPI stays blocked.
func (c *Comm) Split(color, key int) (*Comm, error) {
	var out *Comm
	err := c.use(func(e *funnel.Executor, deadline time.Time) error {
		var h handle
		var err error
		if terr := e.Blocking(deadline, func() { h, err = cSplit(c.h, color, key) }); terr != nil {
			return terr // err stays MPI's to write
		}
		if err != nil || h == nil {
			return err
		}
		if out, err = adopt(e, h); err == nil {
			track(out)
		}
		return err
	})
	return out, err
}

// Rank is this process's rank in c.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes of c.
func (c *Comm) Size() int { return c.size }

// Fortran is c's Fortran handle (MPI_Comm_c2f); 0 once freed.
func (c *Comm) Fortran() int {
	var f int
	_ = c.use(func(e *funnel.Executor, _ time.Time) error { return e.Do(func() { f = cFortran(c.h) }) })
	return f
}

// Handle is c's raw MPI_Comm converted to an integer; 0 once freed.
func (c *Comm) Handle() uintptr {
	var h uintptr
	_ = c.use(func(e *funnel.Executor, _ time.Time) error { return e.Do(func() { h = cRaw(c.h) }) })
	return h
}

// Free frees c with MPI_Comm_free. Safe on nil, twice and after Finalize;
// World's communicator is freed by Finalize only.
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
	rt.mu.Lock()
	delete(rt.comms, c)
	rt.mu.Unlock()
	h := c.h
	c.h = nil
	if terr := e.Blocking(deadline, func() { err = cCommFree(h) }); terr != nil {
		return terr
	}
	return err
}

// use runs f with c's handle valid and no other call of c running.
func (c *Comm) use(f func(e *funnel.Executor, deadline time.Time) error) error {
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
