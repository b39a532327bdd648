package engine

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/kernels"
)

// collective enqueues one collective on s. Registered buffers are used in
// place (gpu_reg.go); otherwise user buffers are not mapped by the peers,
// so data is staged through the mapped LL area (small all-reduces) or the
// bulk area, one kernel per operation that moves the data through it
// segment by segment (kernels/staged.cuh).
func (g *gpuBackend) collective(e *Engine, o *Op, s cuda.Stream) error {
	if o.Count == 0 {
		return nil
	}
	if done, err := g.zeroCopy(e, o, s); done || err != nil { // registration hook
		return err
	}
	g.countStaged(e, o)
	switch o.Kind {
	case AllReduce:
		return g.allReduce(e, o, s)
	case ReduceScatter:
		return g.reduceScatter(e, o, s)
	case Reduce:
		return g.reduce(e, o, s)
	case AllGather:
		return g.allGather(e, o, s)
	case Broadcast:
		return g.broadcast(e, o, s)
	}
	return gccl.Errorf(gccl.InternalError, "kind", "%v is not a collective", o.Kind)
}

// redKernel resolves a reduction kernel's entry point and scalar argument
// (PreMulSum's factor; Avg divides in the kernel).
func (g *gpuBackend) redKernel(e *Engine, kernel string, o *Op) (string, float64, error) {
	name, err := kernels.ReductionName(kernel, o.Type, o.Op)
	if err != nil {
		return "", 0, err
	}
	if o.Op < gccl.NumBuiltinOps {
		return name, 1, nil
	}
	e.redops.mu.Lock()
	p, ok := e.redops.ops[o.Op]
	e.redops.mu.Unlock()
	if !ok {
		return "", 0, gccl.Errorf(gccl.InvalidArgument, "op", "%v was destroyed before the operation was launched", o.Op)
	}
	if p.t != o.Type {
		return "", 0, gccl.Errorf(gccl.InvalidArgument, "op", "%v was made for %v, not %v", o.Op, p.t, o.Type)
	}
	v := p.value
	if p.res == ScalarDevice {
		// Read when the operation is launched (a graph keeps this value).
		v = make([]byte, o.Type.Size())
		if err := g.drv.MemcpyDtoH(v, p.scalar); err != nil {
			return "", 0, gccl.Errorf(gccl.Code(err), "op", "reading the device scalar of %v: %w", o.Op, err)
		}
	}
	f, err := elemValue(v, o.Type)
	return name, f, err
}

// comm returns the shared Comm fields with the scratch set to area(r).
func (g *gpuBackend) comm(n int, area func(int) uintptr, bytes int) kernels.Comm {
	c := g.base
	for r := range n {
		c.Scratch[r] = area(r)
	}
	c.ScratchBytes = uint64(bytes)
	return c
}

func (g *gpuBackend) allReduce(e *Engine, o *Op, s cuda.Stream) error {
	n, me, es := e.nranks, e.rank, o.Type.Size()
	bytes := o.Count * es
	kernel, c, grid := kernels.AllReducePipelined, g.comm(n, g.bulk, g.bulkBytes), g.channels(bytes)
	oneShot := g.llAllowed && (g.llForced || bytes <= g.llMax)
	switch {
	case keyed(e): // registrations exist: only kernels that check the key at a barrier
	case oneShot && kernels.OneShotScratchBytes(bytes, n) <= gpuDirectBytes:
		kernel, c = kernels.AllReduceOneShot, g.comm(n, g.direct, gpuDirectBytes)
		grid = min(max(1, ((bytes+7)/8+kernels.Threads-1)/kernels.Threads), g.maxCh)
	case !g.llForced && bytes <= g.pushMax && kernels.PushScratchBytes(bytes, n) <= gpuDirectBytes:
		kernel, c = kernels.AllReducePush, g.comm(n, g.direct, gpuDirectBytes)
	}
	name, scalar, err := g.redKernel(e, kernel, o)
	if err != nil {
		return err
	}
	c.In[me], c.Out[me] = o.Send, o.Recv
	return g.launch(name, grid, s, &c, func(a *cuda.Args) { a.U64(uint64(o.Count)).F64(scalar) })
}

// staged launches a staged kernel (one per operation, through every
// rank's bulk area; staged.cuh) with this rank's in and out buffers.
func (g *gpuBackend) staged(e *Engine, o *Op, s cuda.Stream, name string, bytes int, args func(*cuda.Args)) error {
	c := g.comm(e.nranks, g.bulk, g.bulkBytes)
	c.In[e.rank], c.Out[e.rank], c.Root = o.Send, o.Recv, int32(o.Root)
	return g.launch(name, g.channels(bytes), s, &c, args)
}

// stagedReduction launches the staged reduction kernel over count elements.
func (g *gpuBackend) stagedReduction(e *Engine, o *Op, s cuda.Stream, kernel string) error {
	name, scalar, err := g.redKernel(e, kernel, o)
	if err != nil {
		return err
	}
	return g.staged(e, o, s, name, o.Count*o.Type.Size(), func(a *cuda.Args) { a.U64(uint64(o.Count)).F64(scalar) })
}

func (g *gpuBackend) reduceScatter(e *Engine, o *Op, s cuda.Stream) error {
	return g.stagedReduction(e, o, s, kernels.ReduceScatterStaged)
}

func (g *gpuBackend) reduce(e *Engine, o *Op, s cuda.Stream) error {
	return g.stagedReduction(e, o, s, kernels.ReduceStaged)
}

func (g *gpuBackend) allGather(e *Engine, o *Op, s cuda.Stream) error {
	n := o.Count * o.Type.Size()
	return g.staged(e, o, s, kernels.AllGatherStaged, n, func(a *cuda.Args) { a.U64(uint64(n)) })
}

func (g *gpuBackend) broadcast(e *Engine, o *Op, s cuda.Stream) error {
	n := o.Count * o.Type.Size()
	return g.staged(e, o, s, kernels.BroadcastStaged, n, func(a *cuda.Args) { a.U64(uint64(n)) })
}
