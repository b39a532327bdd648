package soak

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/gccl/gccl/internal/reduce"
)

// slotBytes holds the largest buffer of one operation: maxCount elements of
// 8 bytes. Operation j of a group uses slot j of each rank's buffers.
const slotBytes = maxCount * 8

// sizes returns the bytes an operation sends from and receives into on
// each rank.
func (o op) sizes(nranks int) (send, recv int) {
	n := o.count * o.t.Size()
	switch o.kind {
	case allGather:
		return n, n * nranks
	case reduceScatter:
		return n * nranks, n
	case allToAll:
		return n * nranks, n * nranks
	}
	return n, n
}

// place returns the offsets, within the rank's send and recv slots, of the
// operation's send and receive buffers, and whether the send buffer lies in
// the recv slot (in place). recvSlot is the region that is poisoned before
// and read after the operation: the whole recv slot's first recvBytes,
// except for an in-place reduce-scatter, whose result sits at an offset.
func (o op) place(rank, nranks int) (inRecv bool, sendOff, recvOff int) {
	if !o.inPlace || o.kind == ringShift || o.kind == allToAll {
		return false, 0, 0
	}
	n := o.count * o.t.Size()
	switch o.kind {
	case allGather:
		return true, rank * n, 0
	case reduceScatter:
		return true, 0, rank * n
	}
	return true, 0, 0
}

// input is rank's input to o.
func (o op) input(rank, nranks int) []byte {
	send, _ := o.sizes(nranks)
	b := make([]byte, send)
	reduce.Fill(b, o.t, rand.New(rand.NewPCG(o.seed, uint64(rank)+1)))
	return b
}

// expected is what rank's receive buffer must hold after o, or nil when
// the receive buffer is not defined (reduce on a non-root rank).
func (o op) expected(rank, nranks int) []byte {
	in := make([][]byte, nranks)
	for r := range in {
		in[r] = o.input(r, nranks)
	}
	n := o.count * o.t.Size()
	switch o.kind {
	case allReduce:
		return reduce.Reference(in, o.t, o.red, 0)
	case reduceOp:
		if rank != o.root {
			return nil
		}
		return reduce.Reference(in, o.t, o.red, 0)
	case broadcast:
		return in[o.root]
	case allGather:
		return bytes.Join(in, nil)
	case reduceScatter:
		return reduce.Reference(in, o.t, o.red, 0)[rank*n : (rank+1)*n]
	case ringShift:
		return in[(rank+nranks-1)%nranks]
	case allToAll:
		out := make([]byte, 0, n*nranks)
		for p := range nranks {
			out = append(out, in[p][rank*n:(rank+1)*n]...)
		}
		return out
	}
	panic(fmt.Sprintf("soak: unknown kind %v", o.kind))
}

// firstDiff describes where got and want first differ.
func firstDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d bytes, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("byte %d of %d: got %#02x, want %#02x", i, len(got), got[i], want[i])
		}
	}
	return "equal"
}
