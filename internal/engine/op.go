package engine

import (
	"fmt"
	"math"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
)

// Op is one operation of one communicator. Count is in elements: per rank for
// AllGather (what each rank sends) and ReduceScatter (what each rank
// receives), the whole buffer otherwise. Send ops use Send as the buffer and
// Recv ops use Recv; Peer is their partner. Root is for Broadcast and Reduce.
type Op struct {
	Kind       algo.Kind
	Send, Recv uintptr
	Count      int
	Type       gccl.DataType
	Op         gccl.RedOp
	Root, Peer int
	Stream     gccl.Stream
	scalar     Scalar // Op's CreatePreMulSum operator, captured at enqueue
}

// Scalar is the factor of the CreatePreMulSum operator that the op
// captured when it was launched; the zero Scalar for built-in operators.
func (o *Op) Scalar() Scalar { return o.scalar }

func (o *Op) String() string {
	return fmt.Sprintf("%v(count=%d type=%v op=%v root=%d peer=%d)", o.Kind, o.Count, o.Type, o.Op, o.Root, o.Peer)
}

// Sizes returns the byte sizes of the op's send and receive buffers.
func (o *Op) Sizes(nranks int) (send, recv int) {
	b := o.Count * o.Type.Size()
	switch o.Kind {
	case algo.AllGather:
		return b, nranks * b
	case algo.ReduceScatter:
		return nranks * b, b
	case algo.P2PSend:
		return b, 0
	case algo.P2PRecv:
		return 0, b
	}
	return b, b
}

// Validate checks the op for a communicator of nranks ranks, the rank of
// this process being rank, and returns a *gccl.Error naming the argument at
// fault. validOp tells whether a RedOp beyond the built-ins exists; inAlloc
// (nil: not checked) whether a buffer range lies inside one live
// allocation (device.CheckRange), which is asked before the overlap rule,
// so that a count too large for its buffer is reported as such and not as
// an overlap with the neighbouring allocation.
func (o *Op) Validate(rank, nranks int, validOp func(gccl.RedOp) bool, inAlloc func(arg string, p uintptr, n int) error) error {
	bad := func(arg, format string, a ...any) error {
		return gccl.Errorf(gccl.InvalidArgument, arg, "%v: "+format, append([]any{o.Kind}, a...)...)
	}
	switch {
	case !o.Kind.Valid():
		return gccl.Errorf(gccl.InvalidArgument, "kind", "unknown operation %d", int(o.Kind))
	case !o.Type.Valid():
		return bad("datatype", "unknown data type %d; use one of gccl.DataTypes()", int(o.Type))
	case o.Count < 0:
		return bad("count", "count %d is negative", o.Count)
	case o.Kind.Reduces() && !(o.Op >= 0 && o.Op < gccl.NumBuiltinOps || validOp != nil && validOp(o.Op)):
		return bad("op", "unknown reduction operator %d; use a built-in or one made by CreatePreMulSum on this communicator", int(o.Op))
	case o.Kind.Rooted() && (o.Root < 0 || o.Root >= nranks):
		return bad("root", "root %d is not a rank of this %d-rank communicator", o.Root, nranks)
	case o.Kind.IsP2P() && (o.Peer < 0 || o.Peer >= nranks):
		return bad("peer", "peer %d is not a rank of this %d-rank communicator", o.Peer, nranks)
	}
	per := nranks
	if o.Kind != algo.AllGather && o.Kind != algo.ReduceScatter {
		per = 1
	}
	if o.Count > math.MaxInt/o.Type.Size()/per {
		return bad("count", "count %d of %v overflows the addressable size", o.Count, o.Type)
	}
	return o.validateBuffers(rank, nranks, inAlloc)
}

// validateBuffers checks that the buffers an op touches are set, lie inside
// live allocations (inAlloc) and that send and receive buffers overlap
// only in NCCL's in-place layouts.
func (o *Op) validateBuffers(rank, nranks int, inAlloc func(arg string, p uintptr, n int) error) error {
	sendSz, recvSz := o.Sizes(nranks)
	needSend := sendSz > 0 && !(o.Kind == algo.Broadcast && rank != o.Root)
	needRecv := recvSz > 0 && !(o.Kind == algo.Reduce && rank != o.Root)
	if needSend && o.Send == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "sendbuff", "%v: sendbuff is nil with count %d; pass a buffer of %d bytes", o.Kind, o.Count, sendSz)
	}
	if needRecv && o.Recv == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "recvbuff", "%v: recvbuff is nil with count %d; pass a buffer of %d bytes", o.Kind, o.Count, recvSz)
	}
	if err := o.checkRanges(inAlloc, needSend, needRecv, sendSz, recvSz); err != nil {
		return err
	}
	if !needSend || !needRecv || o.Kind.IsP2P() {
		return nil
	}
	s0, s1 := o.Send, o.Send+uintptr(sendSz)
	r0, r1 := o.Recv, o.Recv+uintptr(recvSz)
	if s0 >= r1 || r0 >= s1 {
		return nil
	}
	if o.inPlace(rank) {
		return nil
	}
	return gccl.Errorf(gccl.InvalidArgument, "recvbuff", "%v: sendbuff and recvbuff overlap without being in place; "+
		"use separate buffers or NCCL's in-place layout (%s)", o.Kind, o.inPlaceRule())
}

// inPlace reports whether the buffers are in NCCL's in-place layout.
func (o *Op) inPlace(rank int) bool {
	off := uintptr(rank * o.Count * o.Type.Size())
	switch o.Kind {
	case algo.AllGather:
		return o.Send == o.Recv+off
	case algo.ReduceScatter:
		return o.Recv == o.Send+off
	}
	return o.Send == o.Recv
}

func (o *Op) inPlaceRule() string {
	switch o.Kind {
	case algo.AllGather:
		return "sendbuff == recvbuff + rank*count*size"
	case algo.ReduceScatter:
		return "recvbuff == sendbuff + rank*recvcount*size"
	}
	return "sendbuff == recvbuff"
}

// Key is o's descriptor as the ranks compare it before they pair their
// kernels (kernels.DevComm.Key; the GPU backends' kernels check it): its
// kind, count, data type, reduction operator (CreatePreMulSum operators
// count as one: their handles and factors may differ between ranks) and
// root, and plan, the backend's words for how it runs the operation
// (kernel, grid, areas, slots), so that ranks that launched different
// operations fail with gccl.ErrInvalidUsage instead of pairing them. It
// holds no operation number: a captured operation replays with the
// number it was captured with, so numbers would refuse valid programs
// that capture on some ranks while others run eagerly. Never zero; it
// allocates nothing.
func (o *Op) Key(plan [4]uint64) uint32 {
	h := uint32(2166136261) // 32-bit FNV-1a
	word := func(v uint64) {
		for range 8 {
			h ^= uint32(v & 0xff)
			h *= 16777619
			v >>= 8
		}
	}
	op, root := uint64(0), uint64(0)
	if o.Kind.Reduces() {
		op = uint64(min(o.Op, gccl.NumBuiltinOps))
	}
	if o.Kind.Rooted() {
		root = uint64(uint32(o.Root))
	}
	word(uint64(o.Kind) | uint64(o.Type)<<8 | op<<16)
	word(root)
	word(uint64(o.Count))
	for _, v := range plan {
		word(v)
	}
	return h | 1
}
