package main

import (
	"fmt"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/p2p"
)

// library is what gccl-perf measures on one rank: gccl itself or a
// baseline. A library also implements hostRunner (it runs on the host
// backend), streamLauncher (it runs on GPU streams) or both; the run's
// clock times it.
type library interface {
	Name() string
	// Supports returns nil when the library can run op with these settings,
	// else an error saying why not (the sweep then skips the library).
	Supports(op perf.Op, t gccl.DataType, redop gccl.RedOp, inplace bool) error
}

// baseline is a library gccl is compared with in the same run (-baseline).
// "mpi" is MPI's own collectives; "nccl" is registered by the GPU build
// (dlopen of libnccl.so.2 through internal/nccl) and missing elsewhere.
type baseline interface {
	library
	Close() error
}

// aborter is a baseline that can tear its communicator down without
// waiting for peers, after a failure.
type aborter interface {
	Abort() error
}

// baselineEnv is what a baseline may use to set itself up on one rank.
type baselineEnv struct {
	comm   *comm.Comm
	device device.Device
	stream gccl.Stream
}

// baselines maps -baseline names to constructors; every rank calls the
// constructor at the same point (it may be collective).
var baselines = map[string]func(baselineEnv) (baseline, error){
	"mpi": newMPIBaseline,
}

func openBaseline(name string, env baselineEnv) (baseline, error) {
	if name == "none" {
		return nil, nil
	}
	mk, ok := baselines[name]
	if !ok {
		return nil, fmt.Errorf("baseline %s is not available in this build (it needs the GPU build of gccl-perf, which loads libnccl.so.2)", name)
	}
	return mk(env)
}

// gcclLib runs operations through gccl's public API on one communicator
// and stream.
type gcclLib struct {
	comm   *comm.Comm
	device device.Device
	stream gccl.Stream
}

func (g *gcclLib) Name() string { return "gccl" }

func (g *gcclLib) Supports(op perf.Op, t gccl.DataType, redop gccl.RedOp, inplace bool) error {
	return nil // every type and operator; in-place support is the layout's to refuse
}

// Run launches c and waits for it on the stream (the host backend's timing).
func (g *gcclLib) Run(c call) (time.Duration, error) {
	start := time.Now()
	if err := g.Launch(c); err != nil {
		return 0, err
	}
	if err := g.device.Synchronize(g.stream); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Launch enqueues c on the stream through gccl's public API.
func (g *gcclLib) Launch(c call) error {
	s := g.stream
	switch c.Op {
	case perf.AllReduce:
		return coll.AllReduce(g.comm, c.Send, c.Recv, c.Count, c.Type, c.RedOp, s)
	case perf.AllGather:
		return coll.AllGather(g.comm, c.Send, c.Recv, c.Count, c.Type, s)
	case perf.ReduceScatter:
		return coll.ReduceScatter(g.comm, c.Send, c.Recv, c.Count, c.Type, c.RedOp, s)
	case perf.Broadcast:
		return coll.Broadcast(g.comm, c.Send, c.Recv, c.Count, c.Type, c.Root, s)
	case perf.Reduce:
		return coll.Reduce(g.comm, c.Send, c.Recv, c.Count, c.Type, c.RedOp, c.Root, s)
	case perf.SendRecv:
		grp := group.New()
		grp.Send(g.comm, c.Send, c.Count, c.Type, c.next(), s)
		grp.Recv(g.comm, c.Recv, c.Count, c.Type, c.prev(), s)
		return grp.End()
	case perf.AllToAll:
		return p2p.AllToAll(g.comm, c.Send, c.Recv, c.Count, c.Type, s)
	}
	return gccl.Errorf(gccl.InvalidArgument, "op", "unknown operation %q", c.Op)
}
