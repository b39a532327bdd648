package baseline

import (
	"fmt"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/mpi"
	"github.com/gccl/gccl/internal/perf"
)

// mpiBaseline runs MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block,
// MPI_Bcast, MPI_Reduce, MPI_Sendrecv, MPI_Alltoall and a hand-written halo
// (MPI_Irecv and MPI_Isend to each neighbour, MPI_Waitall) on the same host
// buffers as gccl. Its times are those of the MPI calls themselves.
type mpiBaseline struct {
	coll *mpi.Collectives
}

func newMPIBaseline(env lib.Env) (lib.Baseline, error) {
	if env.Device.Kind() != device.Host {
		return nil, fmt.Errorf("baseline mpi works on host memory; this run's device is %v (use -baseline nccl on a GPU)", env.Device.Kind())
	}
	c, err := mpi.NewCollectives()
	if err != nil {
		return nil, fmt.Errorf("baseline mpi: %w", err)
	}
	return &mpiBaseline{coll: c}, nil
}

func (m *mpiBaseline) Name() string { return "mpi" }

func (m *mpiBaseline) Close() error { return m.coll.Close() }

func (m *mpiBaseline) Supports(op perf.Op, t gccl.DataType, redop gccl.RedOp, inplace bool) error {
	if mpi.MPIType(t) != nil {
		return fmt.Errorf("baseline mpi: type %v not supported (MPI has int8..uint64, float32, float64)", t)
	}
	if op.Reducing() && mpi.MPIOp(redop) != nil {
		return fmt.Errorf("baseline mpi: operator %v not supported (MPI has sum, prod, max, min)", redop)
	}
	if inplace && op == perf.ReduceScatter {
		return fmt.Errorf("baseline mpi: in-place reducescatter not supported (MPI's in-place result is at the buffer's start, NCCL's at the rank's block)")
	}
	return nil
}

func (m *mpiBaseline) Run(c lib.Call) (time.Duration, error) {
	switch c.Op {
	case perf.AllReduce:
		return m.coll.Allreduce(c.Send, c.Recv, c.Count, c.Type, c.RedOp)
	case perf.AllGather:
		return m.coll.Allgather(c.Send, c.Recv, c.Count, c.Type)
	case perf.ReduceScatter:
		return m.coll.ReduceScatterBlock(c.Send, c.Recv, c.Count, c.Type, c.RedOp)
	case perf.Broadcast:
		return m.bcast(c)
	case perf.Reduce:
		return m.coll.Reduce(c.Send, c.Recv, c.Count, c.Type, c.RedOp, c.Root)
	case perf.SendRecv:
		return m.coll.Sendrecv(c.Send, c.Count, c.Next(), c.Recv, c.Count, c.Prev(), c.Type)
	case perf.AllToAll:
		return m.coll.Alltoall(c.Send, c.Recv, c.Count, c.Type)
	case perf.Halo:
		return m.coll.Halo(mpiFaces(c), c.Type)
	}
	return 0, gccl.Errorf(gccl.InvalidArgument, "op", "unknown operation %q", c.Op)
}

// mpiFaces are c's halo faces with the neighbour on each side, as
// p2p.HaloExchange finds them (Cart.Neighbors), for the hand-written MPI halo.
func mpiFaces(c lib.Call) []mpi.Face {
	nb := c.Grid.Neighbors(c.Rank)
	faces := make([]mpi.Face, len(nb))
	for i, h := range c.Halos() {
		faces[i] = mpi.Face{Peer: nb[i], Send: h.Send, Recv: h.Recv, Count: h.Count}
	}
	return faces
}

// bcast broadcasts into every rank's recv. NCCL reads the root's sendbuff;
// MPI_Bcast has one buffer, so out of place the root first copies send to
// recv, and that copy counts in the time (NCCL's root writes its recvbuff too).
func (m *mpiBaseline) bcast(c lib.Call) (time.Duration, error) {
	var copied time.Duration
	if c.Send != c.Recv && c.Rank == c.Root {
		start := time.Now()
		if err := copyHost(c.Recv, c.Send, c.Count*c.Type.Size()); err != nil {
			return 0, err
		}
		copied = time.Since(start)
	}
	took, err := m.coll.Bcast(c.Recv, c.Count, c.Type, c.Root)
	return took + copied, err
}

// copyHost copies n bytes between host buffers.
func copyHost(dst, src uintptr, n int) error {
	if n == 0 {
		return nil
	}
	if dst == 0 || src == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "buffer", "nil host buffer")
	}
	copy(device.HostBytes(dst, n), device.HostBytes(src, n))
	return nil
}
