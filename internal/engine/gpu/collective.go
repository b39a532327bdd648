package gpu

import (
	"encoding/binary"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/devcopy"
	"github.com/gccl/gccl/kernels"
)

// collective enqueues one collective of at least one element on s, as
// gpuplan.Choose decides: nothing, a copy, a kernel on registered buffers used in place
// (registered.go), or a kernel whose data goes through the mapped direct
// area (the one-shot LL kernels and the push all-reduce) or the bulk area,
// segment by segment (kernels/staged.cuh). It asks the driver whether s is
// capturing, and looks up registrations, only where the choice depends on
// it.
func (g *Backend) collective(o *engine.Op, s cuda.Stream) error {
	in := gpuplan.Input{Kind: o.Kind, Count: o.Count, ElemSize: o.Type.Size(), NRanks: g.nranks, Rank: g.rank, Root: o.Root,
		InPlace: o.Send == o.Recv, PreMulSum: o.Op >= gccl.NumBuiltinOps, PeersMapped: true, CommRegistered: g.regs.Keyed(), Set: g.set}
	if in.CaptureMatters() {
		var err error
		if in.Capturing, err = g.capturing(in, s); err != nil {
			return err
		}
	}
	bufs, err := g.lookup(o, in.RegLookup())
	if err != nil {
		return err
	}
	in.Registered = bufs != nil
	ch, err := gpuplan.Choose(in)
	if err != nil {
		return gccl.Errorf(gccl.InternalError, "kind", "%v", err)
	}
	switch ch.Kernel {
	case gpuplan.KernelNone: // an in-place one-rank collective
		g.last.Store(pathNone)
		return nil
	case gpuplan.KernelCopy: // a one-rank collective (avg divides by one)
		g.last.Store(pathCopy)
		return devcopy.Async(g.drv, o.Recv, o.Send, in.Bytes(), s)
	case gpuplan.KernelSMCopy: // the same, eager and small: the copy kernel
		c := g.base
		c.In[g.rank], c.Out[g.rank] = o.Send, o.Recv
		return g.launch(kernels.Copy, ch.Grid, s, &c, func(a *cuda.Args) { a.U64(uint64(in.Bytes())) })
	case gpuplan.KernelZeroCopy:
		return g.zeroCopy(o, bufs, ch, s)
	case gpuplan.KernelOneShot, gpuplan.KernelPush, gpuplan.KernelPipelined:
		g.countStaged(o)
		return g.run(o, ch, s)
	}
	return gccl.Errorf(gccl.InternalError, "kind", "%v has no GPU path %v", o.Kind, ch.Kernel)
}

// capturing reports whether s is being captured, for an input in whose
// choice depends on it (CaptureMatters). A one-rank copy is a copy node in
// any capture (1.0 µs a replay on an H100, against 2.4 µs for the one-shot
// kernel); an eager one below gpuplan.SingleCopyMin is the copy kernel,
// whose launch costs the host less than a copy.
// A zero-copy candidate asks whether graph registration applies to s
// (regs.View.Capturing), and otherwise takes the eager registrations.
func (g *Backend) capturing(in gpuplan.Input, s cuda.Stream) (bool, error) {
	if in.NRanks == 1 {
		captured, _, err := capture.Capturing(g.drv, gccl.Stream(s))
		return captured, err
	}
	return g.regs.Capturing(s), nil
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
func (g *Backend) comm(n int, area func(int) uintptr, bytes int) kernels.DevComm {
	c := g.base
	for r := range n {
		c.Scratch[r] = area(r)
	}
	c.ScratchBytes = uint64(bytes)
	return c
}

// run launches the kernel family ch.Kernel has for o's kind (the
// reduction kernel of o's type and operator for reductions) with ch's grid
// and area, this rank's buffers and the root: the one-shot and push
// kernels through the direct areas, the pipelined ones through the bulk
// areas.
func (g *Backend) run(o *engine.Op, ch gpuplan.Choice, s cuda.Stream) error {
	c := g.base
	switch ch.Area {
	case gpuplan.DirectArea:
		c = g.comm(g.nranks, g.direct, ch.AreaBytes)
	case gpuplan.BulkArea:
		c = g.comm(g.nranks, g.bulk, ch.AreaBytes)
	}
	c.In[g.rank], c.Out[g.rank], c.Root = o.Send, o.Recv, int32(o.Root)
	c.Key = descKey(o, ch)
	if err := g.checkDescriptor(ch, &c, s); err != nil {
		return err
	}
	family := ch.Kernel.Family(o.Kind)
	if !o.Kind.Reduces() {
		n := o.Count * o.Type.Size()
		return g.launch(family, ch.Grid, s, &c, func(a *cuda.Args) { a.U64(uint64(n)) })
	}
	name, args, err := g.redKernel(family, o)
	if err != nil {
		return err
	}
	return g.launch(name, ch.Grid, s, &c, args.put)
}
