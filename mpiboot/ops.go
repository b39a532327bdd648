package mpiboot

import (
	"encoding/binary"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
)

// Bcast broadcasts buf from root to every process of the job (Comm.Bcast
// on mpiboot's duplicate of MPI_COMM_WORLD).
func Bcast(buf []byte, root int) error {
	w, err := world()
	if err != nil {
		return err
	}
	return w.Bcast(buf, root)
}

// Bcast broadcasts buf from root to every process of c (MPI_Ibcast, polled
// against mpiboot's deadline). Every process passes a buffer of the same
// length; one that does not gets gccl.ErrInvalidArgument, without leaving
// the others waiting.
func (c *Comm) Bcast(buf []byte, root int) error {
	return c.use(func(e *executor, deadline time.Time) error {
		if root < 0 || root >= c.size {
			return gccl.Errorf(gccl.InvalidArgument, "root", "root %d is out of range; it must be in [0, %d)", root, c.size)
		}
		if len(buf) > maxCount {
			return gccl.Errorf(gccl.InvalidArgument, "buf", "%d bytes is more than one MPI call carries (%d)", len(buf), maxCount)
		}
		return c.bcast(e, buf, root, deadline)
	})
}

// bcast sends the root's length first, so that every rank can take part in
// the data broadcast with the root's length even when its own is wrong.
func (c *Comm) bcast(e *executor, buf []byte, root int, deadline time.Time) error {
	n := binary.LittleEndian.AppendUint64(nil, uint64(len(buf)))
	if err := c.bcastRaw(e, n, root, deadline); err != nil {
		return err
	}
	rootLen := int(binary.LittleEndian.Uint64(n))
	if rootLen == len(buf) {
		return c.bcastRaw(e, buf, root, deadline)
	}
	if err := c.bcastRaw(e, make([]byte, rootLen), root, deadline); err != nil {
		return err
	}
	return gccl.Errorf(gccl.InvalidArgument, "buf", "rank %d passed %d bytes but root %d broadcast %d; pass buffers of the same length on every rank", c.rank, len(buf), root, rootLen)
}

func (c *Comm) bcastRaw(e *executor, buf []byte, root int, deadline time.Time) error {
	var r *request
	var err error
	if terr := e.do(func() { r, err = cIbcast(c.h, buf, root) }); terr != nil || err != nil {
		return firstErr(terr, err)
	}
	if err = complete(e, r, deadline, "MPI_Ibcast"); err != nil {
		return err
	}
	r.result(0, buf)
	r.free()
	return nil
}

// Allgather gathers send from every process of the job (Comm.Allgather on
// mpiboot's duplicate of MPI_COMM_WORLD).
func Allgather(send []byte) ([]byte, error) {
	w, err := world()
	if err != nil {
		return nil, err
	}
	return w.Allgather(send)
}

// Allgather gathers send from every process of c, in rank order: the result
// holds Size() × len(send) bytes. Every process must pass the same length;
// otherwise all of them get gccl.ErrInvalidArgument.
func (c *Comm) Allgather(send []byte) ([]byte, error) {
	var out []byte
	err := c.use(func(e *executor, deadline time.Time) error {
		if len(send) > maxCount/c.size {
			return gccl.Errorf(gccl.InvalidArgument, "send", "%d bytes × %d ranks is more than one MPI call carries (%d)", len(send), c.size, maxCount)
		}
		var err error
		out, err = c.allgather(e, send, deadline)
		return err
	})
	return out, err
}

func (c *Comm) allgather(e *executor, send []byte, deadline time.Time) ([]byte, error) {
	lens, err := c.allgatherRaw(e, binary.LittleEndian.AppendUint64(nil, uint64(len(send))), deadline)
	if err != nil {
		return nil, err
	}
	for r := range c.size {
		if n := binary.LittleEndian.Uint64(lens[8*r:]); n != uint64(len(send)) {
			return nil, gccl.Errorf(gccl.InvalidArgument, "send", "rank %d passed %d bytes, another passed %d; pass the same length on every rank", r, n, len(send))
		}
	}
	return c.allgatherRaw(e, send, deadline)
}

func (c *Comm) allgatherRaw(e *executor, send []byte, deadline time.Time) ([]byte, error) {
	var r *request
	var err error
	if terr := e.do(func() { r, err = cIallgather(c.h, send, c.size) }); terr != nil || err != nil {
		return nil, firstErr(terr, err)
	}
	if err = complete(e, r, deadline, "MPI_Iallgather"); err != nil {
		return nil, err
	}
	out := make([]byte, len(send)*c.size)
	r.result(1, out)
	r.free()
	return out, nil
}

// Barrier returns once every process of the job has entered it.
func Barrier() error {
	w, err := world()
	if err != nil {
		return err
	}
	return w.Barrier()
}

// Barrier returns once every process of c has entered it (MPI_Ibarrier).
func (c *Comm) Barrier() error {
	return c.use(func(e *executor, deadline time.Time) error {
		var r *request
		var err error
		if terr := e.do(func() { r, err = cIbarrier(c.h) }); terr != nil || err != nil {
			return firstErr(terr, err)
		}
		return complete(e, r, deadline, "MPI_Ibarrier")
	})
}

// Iprobe calls MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) on mpiboot's
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
func iprobe(e *executor) (bool, error) {
	st.mu.Lock()
	w := st.world
	st.mu.Unlock()
	if w == nil {
		return false, errFinalized
	}
	var flag bool
	var err error
	if terr := e.do(func() { flag, err = cIprobe(w.h) }); terr != nil {
		return false, terr
	}
	return flag, err
}

// complete polls a request with MPI_Test until it completes or the
// deadline passes. After a timeout the request stays outstanding (MPI
// cannot cancel a collective) and its buffers are never freed.
func complete(e *executor, r *request, deadline time.Time, call string) error {
	p := wait.Poller{Deadline: deadline, What: call, MaxSleep: time.Millisecond}
	for {
		var done bool
		var err error
		if terr := e.do(func() { done, err = r.test() }); terr != nil || err != nil {
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
