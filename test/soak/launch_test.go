package soak

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/p2p"
)

// call is one operation placed in a rank's buffers.
type call struct {
	o          op
	send, recv uintptr
}

// direct launches c on its own through coll and p2p.
func (c call) direct(cm *comm.Comm, s gccl.Stream) error {
	o, n, r := c.o, cm.Count(), cm.Rank()
	switch o.kind {
	case allReduce:
		return coll.AllReduce(cm, c.send, c.recv, o.count, o.t, o.red, s)
	case broadcast:
		return coll.Broadcast(cm, c.send, c.recv, o.count, o.t, o.root, s)
	case reduceOp:
		return coll.Reduce(cm, c.send, c.recv, o.count, o.t, o.red, o.root, s)
	case allGather:
		return coll.AllGather(cm, c.send, c.recv, o.count, o.t, s)
	case reduceScatter:
		return coll.ReduceScatter(cm, c.send, c.recv, o.count, o.t, o.red, s)
	case ringShift:
		g := group.New()
		g.Send(cm, c.send, o.count, o.t, (r+1)%n, s)
		g.Recv(cm, c.recv, o.count, o.t, (r+n-1)%n, s)
		return g.End()
	case allToAll:
		return p2p.AllToAll(cm, c.send, c.recv, o.count, o.t, s)
	}
	return gccl.Errorf(gccl.InvalidArgument, "kind", "unknown kind %v", o.kind)
}

// add puts c into group g.
func (c call) add(g *group.Group, cm *comm.Comm, s gccl.Stream) {
	o, n, r := c.o, cm.Count(), cm.Rank()
	switch o.kind {
	case allReduce:
		g.AllReduce(cm, c.send, c.recv, o.count, o.t, o.red, s)
	case broadcast:
		g.Broadcast(cm, c.send, c.recv, o.count, o.t, o.root, s)
	case reduceOp:
		g.Reduce(cm, c.send, c.recv, o.count, o.t, o.red, o.root, s)
	case allGather:
		g.AllGather(cm, c.send, c.recv, o.count, o.t, s)
	case reduceScatter:
		g.ReduceScatter(cm, c.send, c.recv, o.count, o.t, o.red, s)
	case ringShift:
		g.Send(cm, c.send, o.count, o.t, (r+1)%n, s)
		g.Recv(cm, c.recv, o.count, o.t, (r+n-1)%n, s)
	case allToAll:
		bytes := uintptr(o.count * o.t.Size())
		for p := range n {
			g.Send(cm, c.send+uintptr(p)*bytes, o.count, o.t, p, s)
			g.Recv(cm, c.recv+uintptr(p)*bytes, o.count, o.t, p, s)
		}
	}
}
