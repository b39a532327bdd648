package group

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/pattern"
)

// Scatter adds a p2p.Scatter.
func (g *Group) Scatter(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) {
	g.addPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.Scatter(e.CheckRange, e.Rank(), e.NRanks(), sendbuff, recvbuff, count, t, root, s)
	})
}

// Gather adds a p2p.Gather.
func (g *Group) Gather(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) {
	g.addPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.Gather(e.CheckRange, e.Rank(), e.NRanks(), sendbuff, recvbuff, count, t, root, s)
	})
}

// AllToAll adds a p2p.AllToAll.
func (g *Group) AllToAll(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, s gccl.Stream) {
	g.addPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.AllToAll(e.CheckRange, e.NRanks(), sendbuff, recvbuff, count, t, s)
	})
}

// AllToAllv adds a p2p.AllToAllv.
func (g *Group) AllToAllv(c *comm.Comm, sendbuff uintptr, sendcounts, sdispls []int, recvbuff uintptr, recvcounts, rdispls []int, t gccl.DataType, s gccl.Stream) {
	g.addPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.AllToAllv(e.CheckRange, e.NRanks(), sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, t, s)
	})
}

// NeighborExchange adds a p2p.NeighborExchange.
func (g *Group) NeighborExchange(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, peers []int, s gccl.Stream) {
	g.addPattern(c, func(e *engine.Engine) ([]engine.Op, error) {
		return pattern.NeighborExchange(e.CheckRange, sendbuff, recvbuff, count, t, peers, s)
	})
}
