package mpiboot

import (
	"time"

	"github.com/gccl/gccl"
)

// Request is a point-to-point MPI operation in flight (Isend, Irecv) on a
// Comm; Wait completes it.
type Request struct {
	r    *request
	call string
	done bool
}

// Isend starts MPI_Isend of n bytes at addr to peer (a rank of c) with tag.
// addr is memory outside Go's heap that stays valid until Wait returns: host
// memory from a device's Alloc or C, or GPU memory when MPI is CUDA-aware
// (see CUDAAware). The application's own MPI traffic goes on its own
// communicators; these are for code that has no other MPI binding.
func (c *Comm) Isend(addr uintptr, n, peer, tag int) (*Request, error) {
	return c.start(true, addr, n, peer, tag)
}

// Irecv starts MPI_Irecv of n bytes into addr from peer with tag (see Isend).
func (c *Comm) Irecv(addr uintptr, n, peer, tag int) (*Request, error) {
	return c.start(false, addr, n, peer, tag)
}

func (c *Comm) start(send bool, addr uintptr, n, peer, tag int) (*Request, error) {
	call := "MPI_Irecv"
	if send {
		call = "MPI_Isend"
	}
	var q *Request
	err := c.use(func(e *executor, _ time.Time) error {
		switch {
		case peer < 0 || peer >= c.size:
			return gccl.Errorf(gccl.InvalidArgument, "peer", "peer %d is not a rank of this %d-process communicator", peer, c.size)
		case n < 0 || n > maxCount:
			return gccl.Errorf(gccl.InvalidArgument, "n", "%d bytes; one MPI call carries 0 to %d", n, maxCount)
		case addr == 0 && n > 0:
			return gccl.Errorf(gccl.InvalidArgument, "addr", "nil buffer for %d bytes", n)
		case tag < 0:
			return gccl.Errorf(gccl.InvalidArgument, "tag", "negative tag %d", tag)
		}
		var r *request
		var err error
		if terr := e.do(func() { r, err = cIsendrecv(c.h, send, addr, n, peer, tag) }); terr != nil || err != nil {
			return firstErr(terr, err)
		}
		q = &Request{r: r, call: call}
		return nil
	})
	return q, err
}

// Wait polls the request with MPI_Test until it completes, bounded by
// mpiboot's deadline (SetTimeout, else GCCL_TIMEOUT): past it Wait returns
// gccl.ErrTimeout and the request stays outstanding. Waiting on a completed
// request returns nil at once.
func (q *Request) Wait() error {
	if q == nil {
		return gccl.Errorf(gccl.InvalidArgument, "request", "nil *mpiboot.Request")
	}
	if q.done {
		return nil
	}
	e, deadline, err := acquire()
	if err != nil {
		return err
	}
	defer live.RUnlock()
	if err := complete(e, q.r, deadline, q.call); err != nil {
		return err
	}
	q.done = true
	return nil
}
