package layout

import (
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/p2p"
)

// Spec is what an operation's layout depends on besides its size: the
// operation, the type, the rank among nranks, in place or not and, for
// halo, the grid of ranks.
type Spec struct {
	Op      perf.Op
	Type    gccl.DataType
	Rank    int
	NRanks  int
	InPlace bool
	Grid    p2p.Cart // halo only
}

// Layout is where one size's data lives on one rank, in elements.
type Layout struct {
	Op        perf.Op
	Count     int // the call's count (halo: of one face)
	SendElems int
	RecvElems int
	MemElems  int      // elements of memory the rank needs (one buffer in place, two otherwise)
	Grid      p2p.Cart // halo: the grid of ranks
	sendOff   int      // offset of the send data from the start of the rank's memory
	recvOff   int      // offset of the result
	inplace   bool
}

// New lays out size bytes of s.Op. Out of place, send and recv are two
// buffers (recvOff counts from the second); in place they overlap as NCCL
// defines it. Halo's size is one face: the send buffer holds the rank's
// faces and the recv buffer its halos, one per side in p2p.HaloExchange's
// order (lower then upper neighbour per dimension), each Count elements.
func (s Spec) New(size int64) (Layout, error) {
	elems := int(size / int64(s.Type.Size()))
	l := Layout{Op: s.Op, Count: elems, SendElems: elems, RecvElems: elems, inplace: s.InPlace}
	switch {
	case s.Op.Blocked():
		l.Count = elems / s.NRanks
		switch s.Op {
		case perf.AllGather:
			l.SendElems = l.Count
		case perf.ReduceScatter:
			l.RecvElems = l.Count
		}
	case s.Op == perf.Halo:
		l.Grid = s.Grid
		l.SendElems, l.RecvElems = 2*len(s.Grid.Dims)*elems, 2*len(s.Grid.Dims)*elems
	}
	l.MemElems = l.SendElems + l.RecvElems
	if !s.InPlace {
		return l, nil
	}
	switch s.Op {
	case perf.AllReduce, perf.Broadcast, perf.Reduce:
		l.MemElems = elems
	case perf.AllGather:
		l.MemElems, l.sendOff = l.RecvElems, s.Rank*l.Count
	case perf.ReduceScatter:
		l.MemElems, l.recvOff = l.SendElems, s.Rank*l.Count
	default:
		return l, fmt.Errorf("%s has no in-place form; drop -inplace", s.Op)
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

// SizeBytes is the size nccl-tests reports for the layout (halo: one face).
func (l Layout) SizeBytes(t gccl.DataType, nranks int) int64 {
	n := l.Count
	if l.Op.Blocked() {
		n *= nranks
	}
	return int64(n) * int64(t.Size())
}

// AlgBytes is the byte count the algorithm bandwidth divides by the time:
// SizeBytes, except for halo, where it is the bytes a rank sends in one
// exchange: its faces that have a neighbour (to itself too, on a periodic
// dimension of one rank) times the face, averaged over the ranks, since
// ranks at the edge of a non-periodic grid send fewer.
func (l Layout) AlgBytes(t gccl.DataType, nranks int) int64 {
	size := l.SizeBytes(t, nranks)
	if l.Op != perf.Halo {
		return size
	}
	faces := 0
	for r := range nranks {
		for _, nb := range l.Grid.Neighbors(r) {
			if nb >= 0 {
				faces++
			}
		}
	}
	return int64(faces) * size / int64(nranks)
}
