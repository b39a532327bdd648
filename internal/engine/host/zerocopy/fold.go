package zerocopy

import (
	"unsafe"

	"github.com/gccl/gccl/internal/algo"
)

// run moves this rank's share of the data. Every rank works on its own
// slice (or its own output), so no two ranks write the same bytes and the
// work is spread evenly:
//
//   - AllReduce: rank r reduces slice r of every rank's input, block by
//     block in a private accumulator, and stores the result into slice r of
//     every rank's output.
//   - Reduce: the same, storing into the root's output only.
//   - ReduceScatter: rank r reduces block r of every rank's input into its
//     own output.
//   - AllGather: rank r copies every rank's input into its own output.
//   - Broadcast: rank r copies the root's input into its own output.
//
// Copy-in (small) operations read the ranks' copy-in areas instead, and
// every rank computes its whole output alone: AllReduce and the root of a
// Reduce reduce every element.
//
// Inputs are folded in rank order, so a result does not depend on which
// rank computed it. The private accumulator makes in-place operation safe:
// a block is read from every input before it is stored anywhere but at the
// index being read.
func (zo *op) run() error {
	n, r, es := zo.n, zo.r, zo.es
	cnt := zo.count * es
	switch zo.kind {
	case algo.AllReduce, algo.Reduce:
		if zo.copyIn { // every rank (the root of a Reduce) reduces everything into its own output
			if zo.kind == algo.Reduce && r != zo.root {
				return nil
			}
			return zo.reduceSpan(algo.Span{Len: zo.count}, func(j, off int) []byte { return zo.send[j][off:] }, zo.recv[r:r+1])
		}
		s := algo.Slices(zo.count, n, es)[r]
		outs := append([][]byte{zo.recv[r]}, zo.recv[:r]...) // its own first: local stores
		outs = append(outs, zo.recv[r+1:]...)
		if zo.kind == algo.Reduce {
			outs = zo.recv[zo.root : zo.root+1]
		}
		return zo.reduceSpan(s, func(j, off int) []byte { return zo.send[j][off:] }, outs)
	case algo.ReduceScatter:
		in := func(j, off int) []byte { return zo.send[j][r*cnt+off:] }
		return zo.reduceSpan(algo.Span{Len: zo.count}, in, zo.recv[r:r+1])
	case algo.AllGather:
		for j := range n {
			copyIfMoved(zo.recv[r][j*cnt:(j+1)*cnt], zo.send[j])
		}
	case algo.Broadcast:
		copyIfMoved(zo.recv[r], zo.send[zo.root])
	}
	return nil
}

// reduceSpan reduces the elements of span s over every rank's input
// (in(j, byteOff) is rank j's input from that byte offset) and stores the
// result at the same byte offset in each of outs. The inputs but the last
// are folded into the accumulator; the last fold writes outs[0] directly
// (an input it aliases in place was either folded already or is read at the
// very index being written), and the other outputs are copied from it.
func (zo *op) reduceSpan(s algo.Span, in func(j, off int) []byte, outs [][]byte) error {
	es := zo.es
	for _, b := range algo.Blocks(s, es, len(zo.tmp)) {
		off, k := b.Off*es, b.Len*es
		first := outs[0][off : off+k]
		if err := zo.fold(first, in, off, k); err != nil {
			return err
		}
		if zo.post != nil {
			if err := zo.post(first); err != nil {
				return err
			}
		}
		for _, out := range outs[1:] {
			copy(out[off:off+k], first)
		}
	}
	return nil
}

// fold sets dst to the reduction of the k bytes at off of every input.
func (zo *op) fold(dst []byte, in func(j, off int) []byte, off, k int) error {
	n := zo.n
	if n == 1 {
		copyIfMoved(dst, in(0, off)[:k])
		return nil
	}
	acc := in(0, off)[:k]
	for j := 1; j < n-1; j++ {
		if err := zo.combine(zo.tmp[:k], acc, in(j, off)[:k]); err != nil {
			return err
		}
		acc = zo.tmp[:k]
	}
	return zo.combine(dst, acc, in(n-1, off)[:k])
}

// copyIfMoved copies src to dst unless they are the same bytes (in place).
func copyIfMoved(dst, src []byte) {
	if len(dst) > 0 && unsafe.SliceData(dst) != unsafe.SliceData(src) {
		copy(dst, src)
	}
}
