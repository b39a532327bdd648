package main

import (
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/perf"
)

// layout is where one size's data lives on one rank, in elements.
type layout struct {
	op        perf.Op
	count     int // the call's count
	sendElems int
	recvElems int
	sendOff   int // offset of the send data from the start of the rank's memory
	recvOff   int // offset of the result
	memElems  int // elements of memory the rank needs (one buffer in place, two otherwise)
	inplace   bool
}

// newLayout lays out size bytes of op on rank of nranks. Out of place, send
// and recv are two buffers (recvOff counts from the second); in place they
// overlap as NCCL defines it.
func newLayout(op perf.Op, size int64, t gccl.DataType, rank, nranks int, inplace bool) (layout, error) {
	elems := int(size / int64(t.Size()))
	l := layout{op: op, count: elems, sendElems: elems, recvElems: elems, inplace: inplace}
	if op.Blocked() {
		l.count = elems / nranks
		switch op {
		case perf.AllGather:
			l.sendElems = l.count
		case perf.ReduceScatter:
			l.recvElems = l.count
		}
	}
	l.memElems = l.sendElems + l.recvElems
	if !inplace {
		return l, nil
	}
	switch op {
	case perf.AllReduce, perf.Broadcast, perf.Reduce:
		l.memElems = elems
	case perf.AllGather:
		l.memElems, l.sendOff = l.recvElems, rank*l.count
	case perf.ReduceScatter:
		l.memElems, l.recvOff = l.sendElems, rank*l.count
	default:
		return l, fmt.Errorf("%s has no in-place form; drop -inplace", op)
	}
	return l, nil
}

// place returns the send and recv addresses of the layout in memory at
// base (out of place: send at base, recv right after the send data).
func (l layout) place(base uintptr, t gccl.DataType) (send, recv uintptr) {
	sz := uintptr(t.Size())
	if l.inplace {
		return base + uintptr(l.sendOff)*sz, base + uintptr(l.recvOff)*sz
	}
	return base, base + uintptr(l.sendElems)*sz
}

// sizeBytes is the size nccl-tests reports for the layout.
func (l layout) sizeBytes(t gccl.DataType, nranks int) int64 {
	n := l.count
	if l.op.Blocked() {
		n *= nranks
	}
	return int64(n) * int64(t.Size())
}

// source is one piece of an expected result: the reduction (or, with one
// rank listed, a copy) of elements [from, from+n) of the inputs of ranks.
type source struct {
	ranks []int
	from  int
	n     int
	at    int // where the piece lands in the result, in elements
}

// expected describes the result rank must hold after the operation, as
// pieces of the ranks' inputs; nil means nothing to check on this rank.
func (l layout) expected(rank, nranks, root int) []source {
	all := make([]int, nranks)
	for i := range all {
		all[i] = i
	}
	switch l.op {
	case perf.AllReduce:
		return []source{{ranks: all, n: l.count}}
	case perf.Reduce:
		if rank != root {
			return nil
		}
		return []source{{ranks: all, n: l.count}}
	case perf.Broadcast:
		return []source{{ranks: []int{root}, n: l.count}}
	case perf.SendRecv:
		return []source{{ranks: []int{(rank + nranks - 1) % nranks}, n: l.count}}
	case perf.ReduceScatter:
		return []source{{ranks: all, from: rank * l.count, n: l.count}}
	}
	var out []source // all-gather and all-to-all: one block from each rank
	for j := range nranks {
		from := 0
		if l.op == perf.AllToAll {
			from = rank * l.count
		}
		out = append(out, source{ranks: []int{j}, from: from, n: l.count, at: j * l.count})
	}
	return out
}
