package gpu

import (
	"encoding/binary"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/graph"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/kernels"
)

// collective enqueues one collective on s. Registered buffers are used in
// place (registered.go); otherwise user buffers are not mapped by the peers,
// so data goes through the mapped direct area (small operations: one-shot
// LL kernels, and the push all-reduce) or the bulk area, one kernel per
// operation that moves the data through it segment by segment
// (kernels/staged.cuh).
func (g *Backend) collective(o *engine.Op, s cuda.Stream) error {
	if o.Count == 0 {
		return nil
	}
	if g.nranks == 1 && o.Op < gccl.NumBuiltinOps {
		if done, err := g.single(o, s); done || err != nil {
			return err
		}
	}
	// Up to the one-shot limit the size alone decides (the same on every
	// rank, whatever each registered), and the one-shot beats zero-copy.
	ll := g.oneShot(o.Count * o.Type.Size())
	if !ll && o.Op < gccl.NumBuiltinOps { // PreMulSum: no zero-copy (kernels read peers' raw inputs)
		if done, err := g.zeroCopy(o, s); done || err != nil { // registration hook
			return err
		}
	}
	g.countStaged(o)
	switch o.Kind {
	case algo.AllReduce:
		return g.allReduce(o, s, ll)
	case algo.ReduceScatter:
		return g.reduction(o, s, ll, pick(ll, kernels.ReduceScatterOneShot, kernels.ReduceScatterStaged))
	case algo.Reduce:
		return g.reduction(o, s, ll, pick(ll, kernels.ReduceOneShot, kernels.ReduceStaged))
	case algo.AllGather:
		return g.moving(o, s, ll, pick(ll, kernels.AllGatherOneShot, kernels.AllGatherStaged))
	case algo.Broadcast:
		return g.moving(o, s, ll, pick(ll, kernels.BroadcastOneShot, kernels.BroadcastStaged))
	}
	return gccl.Errorf(gccl.InternalError, "kind", "%v is not a collective", o.Kind)
}

// single handles o on a one-rank communicator, where every collective with
// a built-in operator copies its input (avg divides by one): nothing in
// place, a copy node when s is being captured (1.0 µs a replay on an H100,
// against 2.4 µs for the one-shot kernel), and an eager copy (a copy engine
// transfer, as NCCL does) from gpuSingleCopyMin bytes. done is false for a
// smaller eager copy, which the kernel makes faster (a kernel launch costs
// the host less than a copy: 0.85x NCCL's eager copy there).
func (g *Backend) single(o *engine.Op, s cuda.Stream) (done bool, err error) {
	if o.Send == o.Recv {
		g.last.Store(pathNone)
		return true, nil
	}
	bytes := o.Count * o.Type.Size()
	if bytes < gpuSingleCopyMin {
		captured, _, err := graph.Capturing(g.drv, gccl.Stream(s))
		if err != nil || !captured {
			return false, err
		}
	}
	g.last.Store(pathCopy)
	return true, g.copyAsync(o.Recv, o.Send, bytes, s)
}

// redArgs are a reduction kernel's arguments after the Comm: the count
// and PreMulSum's factor, read by the kernel from scalarPtr (ScalarDevice:
// in stream order, afresh at every graph replay) or else the raw bits of a
// host-immediate scalar; zero for the other operators.
type redArgs struct {
	count     uint64
	bits      uint64
	scalarPtr uintptr
}

// put appends the arguments (kernels: count, scalarBits, scalarPtr).
func (r redArgs) put(a *cuda.Args) { a.U64(r.count).U64(r.bits).Ptr(r.scalarPtr) }

// redKernel resolves a reduction kernel's entry point and arguments from o
// and the operator it captured when it was enqueued (Avg divides in the
// kernel).
func (g *Backend) redKernel(kernel string, o *engine.Op) (string, redArgs, error) {
	name, err := kernels.ReductionName(kernel, o.Type, o.Op)
	r := redArgs{count: uint64(o.Count)}
	if err != nil || o.Op < gccl.NumBuiltinOps {
		return name, r, err
	}
	if sc := o.Scalar(); sc.Residence == engine.ScalarDevice {
		r.scalarPtr = sc.Ptr
	} else {
		r.bits = binary.LittleEndian.Uint64(sc.Value[:])
	}
	return name, r, nil
}

// comm returns the shared Comm fields with the scratch set to area(r).
func (g *Backend) comm(n int, area func(int) uintptr, bytes int) kernels.Comm {
	c := g.base
	for r := range n {
		c.Scratch[r] = area(r)
	}
	c.ScratchBytes = uint64(bytes)
	return c
}

// allReduce launches o's all-reduce kernel: the one-shot when ll, else the
// push kernel up to its limit, else the staged pipeline.
func (g *Backend) allReduce(o *engine.Op, s cuda.Stream, ll bool) error {
	n, me, es := g.nranks, g.rank, o.Type.Size()
	bytes := o.Count * es
	kernel, c, grid := kernels.AllReducePipelined, g.comm(n, g.bulk, g.bulkBytes), g.channels(bytes)
	switch {
	case ll:
		kernel, c, grid = kernels.AllReduceOneShot, g.comm(n, g.direct, gpuDirectBytes), g.llGrid(bytes)
	case !g.regs.Keyed() && !g.llForced && bytes <= g.pushMax && kernels.PushScratchBytes(bytes, n) <= gpuDirectBytes:
		kernel, c = kernels.AllReducePush, g.comm(n, g.direct, gpuDirectBytes)
	}
	name, args, err := g.redKernel(kernel, o)
	if err != nil {
		return err
	}
	c.In[me], c.Out[me] = o.Send, o.Recv
	return g.launch(name, grid, s, &c, args.put)
}

// oneShot reports whether a collective of bytes per rank (per block for
// reduce-scatter) takes a one-shot (LL) kernel through the direct areas,
// registered buffers or not: LL allowed and bytes within GCCL_GPU_LL_MAX
// (any size that fits when GCCL_PROTO allows LL alone). It depends on the
// size and the settings only, which every rank shares, so ranks cannot
// disagree on it (larger operations check the registration key instead).
func (g *Backend) oneShot(bytes int) bool {
	return g.llAllowed && (g.llForced || bytes <= g.llMax) &&
		kernels.OneShotScratchBytes(bytes, g.nranks) <= gpuDirectBytes
}

// llGrid is the grid of a one-shot kernel: a thread per 8 bytes, within
// the grid cap.
func (g *Backend) llGrid(bytes int) int {
	return min(max(1, ((bytes+7)/8+kernels.Threads-1)/kernels.Threads), g.maxCh)
}

// run launches kernel name with this rank's buffers and the root: a
// one-shot through the direct areas, else a staged kernel through the bulk
// areas (one per operation, staged.cuh); bytes sizes the grid.
func (g *Backend) run(o *engine.Op, s cuda.Stream, name string, oneShot bool, bytes int, args func(*cuda.Args)) error {
	c, grid := g.comm(g.nranks, g.bulk, g.bulkBytes), g.channels(bytes)
	if oneShot {
		c, grid = g.comm(g.nranks, g.direct, gpuDirectBytes), g.llGrid(bytes)
	}
	c.In[g.rank], c.Out[g.rank], c.Root = o.Send, o.Recv, int32(o.Root)
	return g.launch(name, grid, s, &c, args)
}

// reduction launches reduction kernel over o's count elements (per block
// for reduce-scatter), a one-shot when ll.
func (g *Backend) reduction(o *engine.Op, s cuda.Stream, ll bool, kernel string) error {
	name, args, err := g.redKernel(kernel, o)
	if err != nil {
		return err
	}
	return g.run(o, s, name, ll, o.Count*o.Type.Size(), args.put)
}

// moving launches data-type independent kernel name over o's bytes (per
// rank for all-gather), a one-shot when ll.
func (g *Backend) moving(o *engine.Op, s cuda.Stream, ll bool, name string) error {
	n := o.Count * o.Type.Size()
	return g.run(o, s, name, ll, n, func(a *cuda.Args) { a.U64(uint64(n)) })
}

// pick is the one-shot kernel when ll, else the staged one.
func pick(ll bool, oneShot, staged string) string {
	if ll {
		return oneShot
	}
	return staged
}
