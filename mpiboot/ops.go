package mpiboot

import (
	"encoding/binary"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/mpi"
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
	return c.use(func(m *mpi.Comm) error {
		if root < 0 || root >= m.Size() {
			return gccl.Errorf(gccl.InvalidArgument, "root", "root %d is out of range; it must be in [0, %d)", root, m.Size())
		}
		if len(buf) > mpi.MaxCount {
			return gccl.Errorf(gccl.InvalidArgument, "buf", "%d bytes is more than one MPI call carries (%d)", len(buf), mpi.MaxCount)
		}
		return bcast(m, buf, root)
	})
}

// bcast sends the root's length first, so that every rank can take part in
// the data broadcast with the root's length even when its own is wrong.
func bcast(m *mpi.Comm, buf []byte, root int) error {
	n := binary.LittleEndian.AppendUint64(nil, uint64(len(buf)))
	if err := m.Bcast(n, root); err != nil {
		return err
	}
	rootLen := int(binary.LittleEndian.Uint64(n))
	if rootLen == len(buf) {
		return m.Bcast(buf, root)
	}
	if err := m.Bcast(make([]byte, rootLen), root); err != nil {
		return err
	}
	return gccl.Errorf(gccl.InvalidArgument, "buf", "rank %d passed %d bytes but root %d broadcast %d; pass buffers of the same length on every rank", m.Rank(), len(buf), root, rootLen)
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
	err := c.use(func(m *mpi.Comm) error {
		if len(send) > mpi.MaxCount/m.Size() {
			return gccl.Errorf(gccl.InvalidArgument, "send", "%d bytes × %d ranks is more than one MPI call carries (%d)", len(send), m.Size(), mpi.MaxCount)
		}
		var err error
		out, err = allgather(m, send)
		return err
	})
	return out, err
}

// allgather all-gathers the lengths first, so that a mismatch fails on every rank.
func allgather(m *mpi.Comm, send []byte) ([]byte, error) {
	lens, err := m.Allgather(binary.LittleEndian.AppendUint64(nil, uint64(len(send))))
	if err != nil {
		return nil, err
	}
	for r := range m.Size() {
		if n := binary.LittleEndian.Uint64(lens[8*r:]); n != uint64(len(send)) {
			return nil, gccl.Errorf(gccl.InvalidArgument, "send", "rank %d passed %d bytes, another passed %d; pass the same length on every rank", r, n, len(send))
		}
	}
	return m.Allgather(send)
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
func (c *Comm) Barrier() error { return c.use((*mpi.Comm).Barrier) }

// Iprobe calls MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) on mpiboot's
// communicator and reports whether a message is waiting. Its use is the side
// effect: it drives the progress engine of MPI implementations that only
// progress inside MPI calls (NCCL guide §4.2.1).
func Iprobe() (bool, error) { return mpi.Iprobe() }
