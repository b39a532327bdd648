package mpi

import (
	"time"

	"github.com/gccl/gccl/internal/mpi/funnel"
)

// Request is a point-to-point MPI operation in flight (Isend, Irecv); Wait
// completes it.
type Request struct {
	r    *request
	call string
	done bool
}

// Isend starts MPI_Isend of n bytes at addr to peer (a rank of c) with tag
// ≥ 0; 0 ≤ n ≤ MaxCount. addr is memory outside Go's heap that stays valid
// until Wait returns.
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
	err := c.use(func(e *funnel.Executor, _ time.Time) error {
		var r *request
		var err error
		if terr := e.Do(func() { r, err = cIsendrecv(c.h, send, addr, n, peer, tag) }); terr != nil || err != nil {
			return firstErr(terr, err)
		}
		q = &Request{r: r, call: call}
		return nil
	})
	return q, err
}

// Wait polls the request with MPI_Test until it completes, bounded by the
// deadline (SetTimeout, else GCCL_TIMEOUT): past it Wait returns
// gccl.ErrTimeout and the request stays outstanding. Waiting on a completed
// request returns nil at once.
func (q *Request) Wait() error {
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
