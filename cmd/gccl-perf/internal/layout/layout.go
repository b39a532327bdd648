package layout

import (
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/perf"
)

// Layout is where one size's data lives on one rank, in elements.
type Layout struct {
	Op        perf.Op
	Count     int // the call's count
	SendElems int
	RecvElems int
	MemElems  int // elements of memory the rank needs (one buffer in place, two otherwise)
	sendOff   int // offset of the send data from the start of the rank's memory
	recvOff   int // offset of the result
	inplace   bool
}

// New lays out size bytes of op on rank of nranks. Out of place, send
// and recv are two buffers (recvOff counts from the second); in place they
// overlap as NCCL defines it.
func New(op perf.Op, size int64, t gccl.DataType, rank, nranks int, inplace bool) (Layout, error) {
	elems := int(size / int64(t.Size()))
	l := Layout{Op: op, Count: elems, SendElems: elems, RecvElems: elems, inplace: inplace}
	if op.Blocked() {
		l.Count = elems / nranks
		switch op {
		case perf.AllGather:
			l.SendElems = l.Count
		case perf.ReduceScatter:
			l.RecvElems = l.Count
		}
	}
	l.MemElems = l.SendElems + l.RecvElems
	if !inplace {
		return l, nil
	}
	switch op {
	case perf.AllReduce, perf.Broadcast, perf.Reduce:
		l.MemElems = elems
	case perf.AllGather:
		l.MemElems, l.sendOff = l.RecvElems, rank*l.Count
	case perf.ReduceScatter:
		l.MemElems, l.recvOff = l.SendElems, rank*l.Count
	default:
		return l, fmt.Errorf("%s has no in-place form; drop -inplace", op)
	}
	return l, nil
}

// Place returns the send and recv addresses of the layout in memory at
// base (out of place: send at base, recv right after the send data).
func (l Layout) Place(base uintptr, t gccl.DataType) (send, recv uintptr) {
	sz := uintptr(t.Size())
	if l.inplace {
		return base + uintptr(l.sendOff)*sz, base + uintptr(l.recvOff)*sz
	}
	return base, base + uintptr(l.SendElems)*sz
}

// SizeBytes is the size nccl-tests reports for the layout.
func (l Layout) SizeBytes(t gccl.DataType, nranks int) int64 {
	n := l.Count
	if l.Op.Blocked() {
		n *= nranks
	}
	return int64(n) * int64(t.Size())
}
