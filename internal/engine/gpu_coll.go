package engine

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/kernels"
)

// collective enqueues one collective on s. Registered buffers are used in
// place (gpu_reg.go); otherwise user buffers are not mapped by the peers,
// so data is staged through the mapped LL and bulk areas; large
// operations go through them in chunks, one kernel per chunk (or, for the
// pipelined all-reduce, segments inside one kernel).
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
	kernel, c, grid := kernels.AllReducePipelined, g.comm(n, g.bulk, gpuBulkBytes), g.channels(bytes)
	if bytes <= gpuOneShotMax && kernels.OneShotScratchBytes(bytes, n) <= gpuLLBytes && !keyed(e) {
		kernel, c = kernels.AllReduceOneShot, g.comm(n, g.ll, gpuLLBytes)
		grid = min(max(1, ((bytes+7)/8+kernels.Threads-1)/kernels.Threads), g.maxCh)
	}
	name, scalar, err := g.redKernel(e, kernel, o)
	if err != nil {
		return err
	}
	c.In[me], c.Out[me] = o.Send, o.Recv
	return g.launch(name, grid, s, &c, func(a *cuda.Args) { a.U64(uint64(o.Count)).F64(scalar) })
}

// chunkElems is how many elements of es bytes fit in bytes, 16-byte aligned.
func chunkElems(bytes, es int) int { return bytes / 16 * 16 / es }

func (g *gpuBackend) reduceScatter(e *Engine, o *Op, s cuda.Stream) error {
	n, me, es := e.nranks, e.rank, o.Type.Size()
	name, scalar, err := g.redKernel(e, kernels.ReduceScatter, o)
	if err != nil {
		return err
	}
	step := chunkElems(gpuBulkBytes/n, es)
	for off := 0; off < o.Count; off += step {
		k := min(step, o.Count-off)
		for r := range n { // my input blocks, chunk off..off+k of each, packed
			if err := g.copyAsync(g.bulk(me)+uintptr(r*k*es), o.Send+uintptr((r*o.Count+off)*es), k*es, s); err != nil {
				return err
			}
		}
		c := g.comm(n, g.bulk, gpuBulkBytes)
		for r := range n {
			c.In[r] = g.bulk(r)
		}
		c.Out[me] = o.Recv + uintptr(off*es)
		if err := g.launch(name, g.channels(k*es), s, &c, func(a *cuda.Args) { a.U64(uint64(k)).F64(scalar) }); err != nil {
			return err
		}
	}
	return nil
}

func (g *gpuBackend) reduce(e *Engine, o *Op, s cuda.Stream) error {
	n, me, es := e.nranks, e.rank, o.Type.Size()
	name, scalar, err := g.redKernel(e, kernels.Reduce, o)
	if err != nil {
		return err
	}
	const half = gpuBulkBytes / 2
	step := chunkElems(half, es)
	for off := 0; off < o.Count; off += step {
		k := min(step, o.Count-off)
		if err := g.copyAsync(g.bulk(me), o.Send+uintptr(off*es), k*es, s); err != nil {
			return err
		}
		c := g.comm(n, g.bulk, gpuBulkBytes)
		for r := range n {
			c.In[r] = g.bulk(r)
		}
		c.Out[o.Root] = g.bulk(o.Root) + half
		c.Root = int32(o.Root)
		if err := g.launch(name, g.channels(k*es), s, &c, func(a *cuda.Args) { a.U64(uint64(k)).F64(scalar) }); err != nil {
			return err
		}
		if me == o.Root {
			if err := g.copyAsync(o.Recv+uintptr(off*es), g.bulk(me)+half, k*es, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *gpuBackend) allGather(e *Engine, o *Op, s cuda.Stream) error {
	n, me := e.nranks, e.rank
	total := o.Count * o.Type.Size() // per rank
	step := gpuBulkBytes / n / 16 * 16
	for off := 0; off < total; off += step {
		k := min(step, total-off)
		c := g.comm(n, g.bulk, gpuBulkBytes)
		for r := range n {
			c.Out[r] = g.bulk(r)
		}
		c.In[me] = o.Send + uintptr(off)
		if err := g.launch(kernels.AllGather, g.channels(k), s, &c, func(a *cuda.Args) { a.U64(uint64(k)) }); err != nil {
			return err
		}
		for r := range n {
			if err := g.copyAsync(o.Recv+uintptr(r*total+off), g.bulk(me)+uintptr(r*k), k, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *gpuBackend) broadcast(e *Engine, o *Op, s cuda.Stream) error {
	n, me := e.nranks, e.rank
	total := o.Count * o.Type.Size()
	const half = gpuBulkBytes / 2
	for off := 0; off < total; off += half {
		k := min(half, total-off)
		if me == o.Root {
			if err := g.copyAsync(g.bulk(me), o.Send+uintptr(off), k, s); err != nil {
				return err
			}
		}
		c := g.comm(n, g.bulk, gpuBulkBytes)
		for r := range n {
			c.Out[r] = g.bulk(r) + half
		}
		c.In[o.Root] = g.bulk(o.Root)
		c.Root = int32(o.Root)
		if err := g.launch(kernels.Broadcast, g.channels(k), s, &c, func(a *cuda.Args) { a.U64(uint64(k)) }); err != nil {
			return err
		}
		if err := g.copyAsync(o.Recv+uintptr(off), g.bulk(me)+half, k, s); err != nil {
			return err
		}
	}
	return nil
}
