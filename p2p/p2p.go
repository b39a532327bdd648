package p2p

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/ops"
	"github.com/gccl/gccl/internal/pattern"
)

// Send sends count elements at sendbuff to peer.
func Send(c *comm.Comm, sendbuff uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) error {
	return launch(c, []engine.Op{ops.Send(sendbuff, count, t, peer, s)})
}

// Recv receives count elements from peer into recvbuff.
func Recv(c *comm.Comm, recvbuff uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) error {
	return launch(c, []engine.Op{ops.Recv(recvbuff, count, t, peer, s)})
}

func launch(c *comm.Comm, ops []engine.Op) error {
	e, err := commlink.Engine(c)
	if err != nil {
		return err
	}
	return e.Launch(ops)
}

// Scatter sends block i (count elements at sendbuff + i*count*size) of
// root's sendbuff to rank i's recvbuff. sendbuff is only read on root.
func Scatter(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) error {
	return launchPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.Scatter(e.CheckRange, e.Rank(), e.NRanks(), sendbuff, recvbuff, count, t, root, s)
	})
}

// Gather collects count elements of every rank's sendbuff into root's
// recvbuff, rank i's at offset i*count. recvbuff is only written on root.
func Gather(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) error {
	return launchPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.Gather(e.CheckRange, e.Rank(), e.NRanks(), sendbuff, recvbuff, count, t, root, s)
	})
}

// AllToAll sends block j (count elements) of sendbuff to rank j, which
// stores it as block i of its recvbuff, for every pair of ranks i, j.
func AllToAll(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, s gccl.Stream) error {
	return launchPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.AllToAll(e.CheckRange, e.NRanks(), sendbuff, recvbuff, count, t, s)
	})
}

// AllToAllv is AllToAll with per-peer counts and displacements (in
// elements), as MPI_Alltoallv: sendcounts[j] elements at sdispls[j] go to
// rank j, recvcounts[j] elements from rank j land at rdispls[j].
func AllToAllv(c *comm.Comm, sendbuff uintptr, sendcounts, sdispls []int, recvbuff uintptr, recvcounts, rdispls []int, t gccl.DataType, s gccl.Stream) error {
	return launchPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.AllToAllv(e.CheckRange, e.NRanks(), sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, t, s)
	})
}

// NeighborExchange sends count elements of sendbuff to each rank in peers
// and receives count elements from each into recvbuff, block k from
// peers[k]. Every listed peer must list this rank in turn.
func NeighborExchange(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, peers []int, s gccl.Stream) error {
	return launchPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.NeighborExchange(e.CheckRange, sendbuff, recvbuff, count, t, peers, s)
	})
}

// launchPattern launches the ops that build makes for c's engine.
func launchPattern(c *comm.Comm, build func(e *engine.Engine) ([]engine.Op, error)) error {
	e, err := commlink.Engine(c)
	if err != nil {
		return err
	}
	ops, err := build(e)
	if err != nil {
		return err
	}
	return e.Launch(ops)
}
