package harness

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/p2p"
)

// InPlaceOffsets returns where sendbuff and recvbuff of an in-place
// collective lie, in bytes, within the one buffer of max(Sizes) bytes that
// holds both: where NCCL puts them, at rank's block for AllGather's
// sendbuff and ReduceScatter's recvbuff, else both at the start.
func (c Case) InPlaceOffsets(rank, nranks int) (send, recv int) {
	n := c.Count * c.T.Size()
	switch c.Kind {
	case "allgather":
		return rank * n, 0
	case "reducescatter":
		return 0, rank * n
	}
	return 0, 0
}

// Call is a Case placed in one rank's buffers, with its operator resolved:
// Case.Op, or for PreMulSum the operator coll.CreatePreMulSum made on the
// rank's communicator.
type Call struct {
	Case
	Send, Recv uintptr
	RedOp      gccl.RedOp
}

// Launch enqueues the call on s on its own: a collective or a p2p pattern
// as one launch, a Send or Recv alone, or (shift, sendrecv to oneself)
// one group.
func (c Call) Launch(cm *comm.Comm, s gccl.Stream) error {
	n, t := c.Count, c.T
	switch c.Kind {
	case "allreduce":
		return coll.AllReduce(cm, c.Send, c.Recv, n, t, c.RedOp, s)
	case "broadcast":
		return coll.Broadcast(cm, c.Send, c.Recv, n, t, c.Root, s)
	case "reduce":
		return coll.Reduce(cm, c.Send, c.Recv, n, t, c.RedOp, c.Root, s)
	case "allgather":
		return coll.AllGather(cm, c.Send, c.Recv, n, t, s)
	case "reducescatter":
		return coll.ReduceScatter(cm, c.Send, c.Recv, n, t, c.RedOp, s)
	case "alltoall":
		return p2p.AllToAll(cm, c.Send, c.Recv, n, t, s)
	case "neighbor":
		return p2p.NeighborExchange(cm, c.Send, c.Recv, n, t, Neighbors(cm.Rank(), cm.Count()), s)
	case "scatter":
		return p2p.Scatter(cm, c.Send, c.Recv, n, t, c.Root, s)
	case "gather":
		return p2p.Gather(cm, c.Send, c.Recv, n, t, c.Root, s)
	case "alltoallv":
		return c.allToAllv(cm, s)
	}
	sends, recvs := c.Transfers(cm.Rank(), cm.Count())
	switch {
	case len(sends)+len(recvs) > 1:
		g := group.New()
		c.Add(g, cm, s)
		return g.End()
	case len(sends) == 1:
		return p2p.Send(cm, c.Send, sends[0].Count, t, sends[0].Peer, s)
	case len(recvs) == 1:
		return p2p.Recv(cm, c.Recv, recvs[0].Count, t, recvs[0].Peer, s)
	}
	return nil // sendrecv on a rank that takes no part
}

// allToAllv launches an alltoallv with Transfers' counts and displacements.
func (c Call) allToAllv(cm *comm.Comm, s gccl.Stream) error {
	sends, recvs := c.Transfers(cm.Rank(), cm.Count())
	v := func(ts []Transfer) (counts, displs []int) {
		for _, t := range ts {
			counts, displs = append(counts, t.Count), append(displs, t.Off)
		}
		return counts, displs
	}
	sc, sd := v(sends)
	rc, rd := v(recvs)
	return p2p.AllToAllv(cm, c.Send, sc, sd, c.Recv, rc, rd, c.T, s)
}

// Add adds the call to g: a collective as itself, a p2p pattern as its
// Sends and Recvs (Transfers).
func (c Call) Add(g *group.Group, cm *comm.Comm, s gccl.Stream) {
	n, t := c.Count, c.T
	switch c.Kind {
	case "allreduce":
		g.AllReduce(cm, c.Send, c.Recv, n, t, c.RedOp, s)
	case "broadcast":
		g.Broadcast(cm, c.Send, c.Recv, n, t, c.Root, s)
	case "reduce":
		g.Reduce(cm, c.Send, c.Recv, n, t, c.RedOp, c.Root, s)
	case "allgather":
		g.AllGather(cm, c.Send, c.Recv, n, t, s)
	case "reducescatter":
		g.ReduceScatter(cm, c.Send, c.Recv, n, t, c.RedOp, s)
	default:
		sends, recvs := c.Transfers(cm.Rank(), cm.Count())
		size := uintptr(t.Size())
		for _, x := range sends {
			g.Send(cm, c.Send+uintptr(x.Off)*size, x.Count, t, x.Peer, s)
		}
		for _, x := range recvs {
			g.Recv(cm, c.Recv+uintptr(x.Off)*size, x.Count, t, x.Peer, s)
		}
	}
}
