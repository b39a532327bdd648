package mpiboot

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/mpi"
)

// Request is a point-to-point MPI operation in flight (Isend, Irecv) on a
// Comm; Wait completes it.
type Request struct {
	r *mpi.Request
}

// Isend starts MPI_Isend of n bytes at addr to peer (a rank of c) with tag.
// addr is memory outside Go's heap that stays valid until Wait returns: host
// memory from a device's Alloc or C, or GPU memory when MPI is CUDA-aware
// (see CUDAAware). The application's own MPI traffic goes on its own
// communicators; these are for code that has no other MPI binding.
func (c *Comm) Isend(addr uintptr, n, peer, tag int) (*Request, error) {
	return c.start((*mpi.Comm).Isend, addr, n, peer, tag)
}

// Irecv starts MPI_Irecv of n bytes into addr from peer with tag (see Isend).
func (c *Comm) Irecv(addr uintptr, n, peer, tag int) (*Request, error) {
	return c.start((*mpi.Comm).Irecv, addr, n, peer, tag)
}

func (c *Comm) start(op func(*mpi.Comm, uintptr, int, int, int) (*mpi.Request, error), addr uintptr, n, peer, tag int) (*Request, error) {
	var q *Request
	err := c.use(func(m *mpi.Comm) error {
		switch {
		case peer < 0 || peer >= m.Size():
			return gccl.Errorf(gccl.InvalidArgument, "peer", "peer %d is not a rank of this %d-process communicator", peer, m.Size())
		case n < 0 || n > mpi.MaxCount:
			return gccl.Errorf(gccl.InvalidArgument, "n", "%d bytes; one MPI call carries 0 to %d", n, mpi.MaxCount)
		case addr == 0 && n > 0:
			return gccl.Errorf(gccl.InvalidArgument, "addr", "nil buffer for %d bytes", n)
		case tag < 0:
			return gccl.Errorf(gccl.InvalidArgument, "tag", "negative tag %d", tag)
		}
		r, err := op(m, addr, n, peer, tag)
		if err == nil {
			q = &Request{r: r}
		}
		return err
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
	return q.r.Wait()
}
