package lib

import (
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/p2p"
)

// Gccl runs operations through gccl's public API on one communicator and
// stream.
type Gccl struct {
	env Env
}

// NewGccl is gccl on e's communicator, device and stream.
func NewGccl(e Env) *Gccl { return &Gccl{env: e} }

func (g *Gccl) Name() string { return "gccl" }

func (g *Gccl) Supports(op perf.Op, t gccl.DataType, redop gccl.RedOp, inplace bool) error {
	return nil // every type and operator; in-place support is the layout's to refuse
}

// Run launches c and waits for it on the stream (the host backend's timing).
func (g *Gccl) Run(c Call) (time.Duration, error) {
	start := time.Now()
	if err := g.Launch(c); err != nil {
		return 0, err
	}
	if err := g.env.Device.Synchronize(g.env.Stream); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Launch enqueues c on the stream through gccl's public API.
func (g *Gccl) Launch(c Call) error {
	cm, s := g.env.Comm, g.env.Stream
	switch c.Op {
	case perf.AllReduce:
		return coll.AllReduce(cm, c.Send, c.Recv, c.Count, c.Type, c.RedOp, s)
	case perf.AllGather:
		return coll.AllGather(cm, c.Send, c.Recv, c.Count, c.Type, s)
	case perf.ReduceScatter:
		return coll.ReduceScatter(cm, c.Send, c.Recv, c.Count, c.Type, c.RedOp, s)
	case perf.Broadcast:
		return coll.Broadcast(cm, c.Send, c.Recv, c.Count, c.Type, c.Root, s)
	case perf.Reduce:
		return coll.Reduce(cm, c.Send, c.Recv, c.Count, c.Type, c.RedOp, c.Root, s)
	case perf.SendRecv:
		grp := group.New()
		grp.Send(cm, c.Send, c.Count, c.Type, c.Next(), s)
		grp.Recv(cm, c.Recv, c.Count, c.Type, c.Prev(), s)
		return grp.End()
	case perf.AllToAll:
		return p2p.AllToAll(cm, c.Send, c.Recv, c.Count, c.Type, s)
	case perf.Halo:
		return p2p.HaloExchange(cm, c.Grid, c.Halos(), c.Type, s)
	}
	return gccl.Errorf(gccl.InvalidArgument, "op", "unknown operation %q", c.Op)
}
