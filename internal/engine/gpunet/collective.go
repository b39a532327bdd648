package gpunet

import (
	"encoding/binary"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/devcopy"
	"github.com/gccl/gccl/kernels"
)

// collective enqueues one collective of at least one element on s: a
// copy on a one-rank communicator (nothing in place), else one ring
// kernel (docs/gpunet.md) on the channels gpuplan's ring model picks for
// it; a small all-reduce that the model gives to the gather
// (gpuplan.Ring.Gather) runs ring_allreduce_gather on one channel.
func (g *Backend) collective(o *engine.Op, s cuda.Stream) error {
	if g.nranks == 1 {
		if o.Op >= gccl.NumBuiltinOps && o.Kind.Reduces() {
			return gccl.Errorf(gccl.InvalidUsage, "op", "a CreatePreMulSum operator on a one-rank communicator across hosts is not supported; this backend serves communicators of several hosts")
		}
		if o.Recv == o.Send || o.Kind == algo.Reduce && o.Recv == 0 {
			return nil
		}
		g.last.Store(&pathCopy)
		return devcopy.Async(g.drv, o.Recv, o.Send, o.Count*o.Type.Size(), s)
	}
	plan := gpuplan.Ring{Kind: o.Kind, Bytes: o.Count * o.Type.Size(), NRanks: g.nranks, NetEdges: g.netEdges, MaxChannels: g.nch,
		SlotData: kernels.RingSlotData(g.slotBytes), Slots: kernels.FIFOSlots}
	gather := plan.Gather()
	grid := plan.Channels()
	if gather {
		grid = 1
	}
	// The operation's key, which every slot carries (kernels.RingSlotData):
	// the plan's words are the grid and whether it gathers; every rank of
	// the ring computes the same from the same operation.
	gw := uint64(0)
	if gather {
		gw = 1
	}
	key := o.Key([4]uint64{uint64(grid), gw, uint64(g.slotBytes), uint64(g.nranks)})
	d := kernels.RingDesc{In: o.Send, Out: o.Recv, Count: uint64(o.Count), SlotBytes: uint64(g.slotBytes), NSlots: kernels.FIFOSlots,
		NRanks: int32(g.nranks), Pos: int32(g.pos[g.rank]), Ranks: g.ranksDev}
	if o.Kind.Rooted() {
		d.Root = int32(g.pos[o.Root])
	}
	for c := range grid {
		d.Ch[c] = kernels.RingConn{Send: kernels.FIFOAt(g.ring[c].send.dev), Recv: kernels.FIFOAt(g.ring[c].recv.dev)}
	}
	put := func(a *cuda.Args) { d.Put(a.Slot(kernels.RingDescBytes, kernels.RingDescAlign)) }
	var family *string
	switch o.Kind {
	case algo.AllGather:
		d.Count = uint64(o.Count * o.Type.Size())
		g.last.Store(&pathAllGather)
		return g.launch(kernels.RingAllGather, grid, key, s, put)
	case algo.Broadcast:
		d.Count = uint64(o.Count * o.Type.Size())
		g.last.Store(&pathBroadcast)
		return g.launch(kernels.RingBroadcast, grid, key, s, put)
	case algo.AllReduce:
		family = &pathAllReduce
		if gather {
			family = &pathAllReduceGather
		}
	case algo.ReduceScatter:
		family = &pathReduceScatter
	case algo.Reduce:
		family = &pathReduce
	default:
		return gccl.Errorf(gccl.InternalError, "kind", "%v is not a collective", o.Kind)
	}
	name, err := kernels.ReductionName(*family, o.Type, o.Op)
	if err != nil {
		return err
	}
	g.last.Store(family)
	bits, ptr := scalarArgs(o)
	return g.launch(name, grid, key, s, func(a *cuda.Args) { put(a); a.U64(bits).Ptr(ptr) })
}

// The paths LastPath reports, stored by address (a launch allocates none).
var (
	pathCopy            = "copy"
	pathAllGather       = kernels.RingAllGather
	pathBroadcast       = kernels.RingBroadcast
	pathP2P             = kernels.NetP2P
	pathAllReduce       = kernels.RingAllReduce
	pathAllReduceGather = kernels.RingAllReduceGather
	pathReduceScatter   = kernels.RingReduceScatter
	pathReduce          = kernels.RingReduce
)

// scalarArgs are a reduction kernel's scalarBits and scalarPtr:
// PreMulSum's factor read by the kernel from ptr (a ScalarDevice: in
// stream order, afresh at every graph replay), else the raw bits of a
// host-immediate scalar; zero for the other operators.
func scalarArgs(o *engine.Op) (bits uint64, ptr uintptr) {
	if o.Op < gccl.NumBuiltinOps {
		return 0, 0
	}
	if sc := o.Scalar(); sc.Residence == engine.ScalarDevice {
		return 0, sc.Ptr
	} else {
		return binary.LittleEndian.Uint64(sc.Value[:]), 0
	}
}
