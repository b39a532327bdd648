package gpu

import (
	"sync/atomic"

	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/gpu/regs"
	"github.com/gccl/gccl/internal/engine/internal/devcopy"
	"github.com/gccl/gccl/kernels"
)

// counters are the Backend's counters behind Stats.
type counters struct {
	staged, zeroCopy atomic.Uint64
}

// Stats returns the data-path counters.
func (g *Backend) Stats() engine.Stats {
	return engine.Stats{StagedBytes: g.stats.staged.Load(), ZeroCopyOps: g.stats.zeroCopy.Load()}
}

// lookup finds o's registered buffers as gpuplan's lookup l asks (nil when it
// asks none, or they are not all in registrations usable zero-copy):
//
//   - EagerLookup: every buffer the peers touch lies in a collective
//     registration (Register) whose peers are mapped;
//   - GraphLookup: s is being captured (an op past the push kernel's
//     limit; up to it the one-shot and push kernels beat zero-copy and
//     need no registration), so the ranks agree on registrations held for
//     the graph's lifetime (regs.View.Agree).
func (g *Backend) lookup(o *engine.Op, l gpuplan.RegLookup) ([]regs.Buf, error) {
	var bufs []regs.Buf
	var ok bool
	var err error
	switch l {
	case gpuplan.GraphLookup:
		bufs, ok, err = g.regs.Agree(o)
	case gpuplan.EagerLookup:
		bufs, ok, err = g.regs.Find(o)
	}
	if !ok || err != nil {
		return nil, err
	}
	return bufs, nil
}

// zeroCopy runs o directly on its registered buffers bufs with ch's grid.
// The kernels compare a key of the descriptor, the registrations and
// offsets across the ranks at their first barrier, so ranks that disagree
// (another operation, registered on some ranks only, other offsets or
// registrations) fail with gccl.ErrInvalidUsage before touching a peer's
// memory.
func (g *Backend) zeroCopy(o *engine.Op, bufs []regs.Buf, ch gpuplan.Choice, s cuda.Stream) error {
	grid := ch.Grid
	release, err := g.regs.Hold(bufs, s)
	if err != nil {
		return err
	}
	c := g.base
	c.Key = regs.Key(o.Kind, bufs) ^ descKey(o, ch)
	switch o.Kind {
	case algo.AllReduce:
		err = g.zcAllReduce(o, bufs, &c, grid, s)
	case algo.AllGather:
		err = g.zcAllGather(o, bufs[0], &c, grid, s)
	case algo.Broadcast:
		err = g.zcBroadcast(o, bufs[0], &c, grid, s)
	case algo.ReduceScatter:
		err = g.zcReduceScatter(o, bufs[0], &c, grid, s)
	}
	if err == nil {
		err = release(true)
	} else {
		_ = release(false)
	}
	if err == nil {
		g.stats.zeroCopy.Add(1)
	}
	return err
}

// zcAllReduce: the two-shot kernel over every rank's registered send and
// receive buffers: each rank reduces its part from all inputs and stores
// it into all outputs.
func (g *Backend) zcAllReduce(o *engine.Op, bufs []regs.Buf, c *kernels.DevComm, grid int, s cuda.Stream) error {
	name, args, err := g.redKernel(kernels.AllReduceTwoShot, o)
	if err != nil {
		return err
	}
	for r := range g.nranks {
		c.In[r], c.Out[r] = bufs[0].At(r), bufs[1].At(r)
	}
	return g.launch(name, grid, s, c, args.put)
}

// zcAllGather: each rank stores its input straight into every rank's
// registered receive buffer.
func (g *Backend) zcAllGather(o *engine.Op, recv regs.Buf, c *kernels.DevComm, grid int, s cuda.Stream) error {
	total := o.Count * o.Type.Size()
	for r := range g.nranks {
		c.Out[r] = recv.At(r)
	}
	c.In[g.rank] = o.Send
	return g.launch(kernels.AllGather, grid, s, c, func(a *cuda.Args) { a.U64(uint64(total)) })
}

// zcBroadcast: the root's registered receive buffer is the source (the
// root first copies its send buffer there unless in place); every rank
// pulls its part from the root and stores it into every rank's buffer.
func (g *Backend) zcBroadcast(o *engine.Op, recv regs.Buf, c *kernels.DevComm, grid int, s cuda.Stream) error {
	total := o.Count * o.Type.Size()
	if g.rank == o.Root {
		if err := devcopy.Async(g.drv, o.Recv, o.Send, total, s); err != nil {
			return err
		}
	}
	for r := range g.nranks {
		c.Out[r] = recv.At(r)
	}
	c.In[o.Root], c.Root = recv.At(o.Root), int32(o.Root)
	return g.launch(kernels.Broadcast, grid, s, c, func(a *cuda.Args) { a.U64(uint64(total)) })
}

// zcReduceScatter: each rank reduces its block from every rank's
// registered send buffer into its own receive buffer.
func (g *Backend) zcReduceScatter(o *engine.Op, send regs.Buf, c *kernels.DevComm, grid int, s cuda.Stream) error {
	name, args, err := g.redKernel(kernels.ReduceScatter, o)
	if err != nil {
		return err
	}
	for r := range g.nranks {
		c.In[r] = send.At(r)
	}
	c.Out[g.rank] = o.Recv
	return g.launch(name, grid, s, c, args.put)
}

// countStaged adds the bytes a staged collective copies through this
// rank's communication buffers.
func (g *Backend) countStaged(o *engine.Op) {
	g.stats.staged.Add(uint64(stagedBytes(o, g.rank, g.nranks)))
}

// stagedBytes is what the staged path of o moves between user buffers and
// this rank's communication buffers: inputs in, results out.
func stagedBytes(o *engine.Op, me, n int) int {
	b := o.Count * o.Type.Size()
	switch o.Kind {
	case algo.AllReduce:
		return 2 * b
	case algo.ReduceScatter:
		return n * b
	case algo.AllGather:
		return n * b
	case algo.Broadcast:
		if me == o.Root {
			return 2 * b
		}
		return b
	case algo.Reduce:
		if me == o.Root {
			return 2 * b
		}
		return b
	}
	return 0
}
