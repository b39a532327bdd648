package group

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/ops"
)

// Group collects operations until End. The zero value is ready to use; a
// Group is not safe for concurrent use.
type Group struct {
	order       []*engine.Engine
	nonblocking bool // the member communicators are nonblocking
	ops         map[*engine.Engine][]engine.Op
	life        lifecycle
	err         error // the first invalid add; End returns it
	ended       bool
}

// New returns an empty group.
func New() *Group { return &Group{} }

// usable reports whether the group takes more: it fails End from its
// first invalid add on, and takes nothing after End.
func (g *Group) usable() bool {
	if g.ended && g.err == nil {
		g.err = gccl.Errorf(gccl.InvalidUsage, "group", "operation added after End; start a new group")
	}
	return g.err == nil
}

func (g *Group) add(c *comm.Comm, op engine.Op) {
	if e := g.member(c); e != nil {
		g.ops[e] = append(g.ops[e], op)
	}
}

// addPattern adds the ops that build makes for c's engine (package
// internal/pattern).
func (g *Group) addPattern(c *comm.Comm, build func(e *engine.Engine) ([]engine.Op, error)) {
	e := g.member(c)
	if e == nil {
		return
	}
	ops, err := build(e)
	if err != nil {
		g.err = err
		return
	}
	g.ops[e] = append(g.ops[e], ops...)
}

// member returns c's engine, a member of the group from now on, or nil
// when the group takes no more or c cannot join it (then End fails).
func (g *Group) member(c *comm.Comm) *engine.Engine {
	if !g.usable() {
		return nil
	}
	e, err := commlink.Engine(c)
	if err != nil {
		g.err = err
		return nil
	}
	nb := nonblocking(c)
	if g.ops == nil {
		g.ops, g.nonblocking = map[*engine.Engine][]engine.Op{}, nb
	} else if nb != g.nonblocking {
		g.err = gccl.Errorf(gccl.InvalidArgument, "comm", "a group mixes blocking and nonblocking communicators (comm.Config.Blocking); "+
			"put each kind in its own group, as NCCL requires")
		return nil
	}
	if _, ok := g.ops[e]; !ok {
		g.order = append(g.order, e)
	}
	return e
}

// nonblocking reports whether c is a nonblocking communicator
// (comm.Config.Blocking false), whose group launches return gccl.ErrInProgress.
func nonblocking(c *comm.Comm) bool {
	b := c.Config().Blocking
	return b != nil && !*b
}

// AllReduce adds a coll.AllReduce.
func (g *Group) AllReduce(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) {
	g.add(c, ops.AllReduce(sendbuff, recvbuff, count, t, op, s))
}

// Broadcast adds a coll.Broadcast.
func (g *Group) Broadcast(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) {
	g.add(c, ops.Broadcast(sendbuff, recvbuff, count, t, root, s))
}

// Reduce adds a coll.Reduce.
func (g *Group) Reduce(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, op gccl.RedOp, root int, s gccl.Stream) {
	g.add(c, ops.Reduce(sendbuff, recvbuff, count, t, op, root, s))
}

// AllGather adds a coll.AllGather.
func (g *Group) AllGather(c *comm.Comm, sendbuff, recvbuff uintptr, sendcount int, t gccl.DataType, s gccl.Stream) {
	g.add(c, ops.AllGather(sendbuff, recvbuff, sendcount, t, s))
}

// ReduceScatter adds a coll.ReduceScatter.
func (g *Group) ReduceScatter(c *comm.Comm, sendbuff, recvbuff uintptr, recvcount int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) {
	g.add(c, ops.ReduceScatter(sendbuff, recvbuff, recvcount, t, op, s))
}

// Send adds a p2p.Send.
func (g *Group) Send(c *comm.Comm, sendbuff uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) {
	g.add(c, ops.Send(sendbuff, count, t, peer, s))
}

// Recv adds a p2p.Recv.
func (g *Group) Recv(c *comm.Comm, recvbuff uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) {
	g.add(c, ops.Recv(recvbuff, count, t, peer, s))
}

// End validates every operation and launches the group: first it creates
// the communicators of its InitRank and Split calls, then it launches the
// operations, one launch per communicator, then it runs its Finalize
// calls. It returns the first invalid argument seen (then nothing is
// launched). End may be called once.
//
// The member communicators are all blocking or all nonblocking: a group
// that mixes them fails with gccl.ErrInvalidArgument naming "comm" and
// launches nothing (NCCL's ncclInvalidArgument).
//
// When the member communicators are nonblocking (comm.Config.Blocking false),
// a successful End returns an error with code gccl.InProgress, as NCCL's
// ncclGroupEnd does: the operations are launched; poll each communicator's
// AsyncError, which is nil once its launch went through (or reports why it
// failed), and synchronise the streams to wait for the results.
func (g *Group) End() error {
	if g.ended {
		return gccl.Errorf(gccl.InvalidUsage, "group", "End called twice")
	}
	g.ended = true
	if g.err != nil {
		return g.err
	}
	if err := g.life.create(); err != nil {
		return err
	}
	works := make([]engine.Work, 0, len(g.order))
	for _, e := range g.order {
		works = append(works, engine.Work{Engine: e, Ops: g.ops[e]})
	}
	if err := engine.LaunchGroup(works); err != nil {
		return err
	}
	if err := g.life.finalize(); err != nil {
		return err
	}
	if g.nonblocking {
		return gccl.Errorf(gccl.InProgress, "group", "launched on a nonblocking communicator; poll AsyncError, then synchronise the streams")
	}
	return nil
}
