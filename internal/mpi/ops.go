package mpi

import (
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/mpi/funnel"
	"github.com/gccl/gccl/internal/wait"
)

// Bcast broadcasts buf from root to every process of c (MPI_Ibcast, polled
// against the deadline). Every process passes len(buf) ≤ MaxCount bytes,
// the same length everywhere, and root is a rank of c.
func (c *Comm) Bcast(buf []byte, root int) error {
	return c.use(func(e *funnel.Executor, deadline time.Time) error {
		r, err := await(e, deadline, "MPI_Ibcast", func() (*request, error) { return cIbcast(c.h, buf, root) })
		if err == nil {
			r.result(0, buf)
			r.free()
		}
		return err
	})
}

// Allgather gathers send from every process of c, in rank order
// (MPI_Iallgather, polled against the deadline): Size() × len(send) bytes.
// Every process passes the same length, and Size() × len(send) ≤ MaxCount.
func (c *Comm) Allgather(send []byte) ([]byte, error) {
	var out []byte
	err := c.use(func(e *funnel.Executor, deadline time.Time) error {
		r, err := await(e, deadline, "MPI_Iallgather", func() (*request, error) { return cIallgather(c.h, send, c.size) })
		if err == nil {
			out = make([]byte, len(send)*c.size)
			r.result(1, out)
			r.free()
		}
		return err
	})
	return out, err
}

// Barrier returns once every process of c has entered it (MPI_Ibarrier).
func (c *Comm) Barrier() error {
	return c.use(func(e *funnel.Executor, deadline time.Time) error {
		_, err := await(e, deadline, "MPI_Ibarrier", func() (*request, error) { return cIbarrier(c.h) })
		return err
	})
}

// Iprobe calls MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) on World's
// communicator and reports whether a message is waiting. Its use is the side
// effect: it drives the progress engine of MPI implementations that only
// progress inside MPI calls (NCCL guide §4.2.1).
func Iprobe() (bool, error) {
	e, _, err := acquire()
	if err != nil {
		return false, err
	}
	defer live.RUnlock()
	return iprobe(e)
}

// iprobe is Iprobe with live held.
func iprobe(e *funnel.Executor) (bool, error) {
	rt.mu.Lock()
	w := rt.world
	rt.mu.Unlock()
	if w == nil {
		return false, ErrNotRunning
	}
	var flag bool
	var err error
	if terr := e.Do(func() { flag, err = cIprobe(w.h) }); terr != nil {
		return false, terr
	}
	return flag, err
}

// await starts a nonblocking MPI call where MPI allows it and polls it to
// completion against the deadline (complete).
func await(e *funnel.Executor, deadline time.Time, call string, start func() (*request, error)) (*request, error) {
	var r *request
	var err error
	if terr := e.Do(func() { r, err = start() }); terr != nil || err != nil {
		return nil, firstErr(terr, err)
	}
	return r, complete(e, r, deadline, call)
}

// complete polls a request with MPI_Test until it completes or the
// deadline passes. After a timeout the request stays outstanding (MPI
// cannot cancel a collective) and its buffers are never freed.
func complete(e *funnel.Executor, r *request, deadline time.Time, call string) error {
	p := wait.Poller{Deadline: deadline, What: call, MaxSleep: time.Millisecond}
	for {
		var done bool
		var err error
		if terr := e.Do(func() { done, err = r.test() }); terr != nil || err != nil {
			return firstErr(terr, err)
		}
		if done {
			return nil
		}
		if p.Pause() != nil {
			return gccl.Errorf(gccl.TimeoutError, call, "not complete after the deadline; a process of the job did not take part (set it with mpiboot.SetTimeout), abort the job")
		}
	}
}
