package gpunet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// collCase is one collective to run and check on every rank.
type collCase struct {
	kind    algo.Kind
	t       gccl.DataType
	op      gccl.RedOp
	count   int
	inPlace bool
	root    int
}

func (c collCase) String() string {
	return fmt.Sprintf("%v/%v/%v/count=%d/inplace=%v/root=%d", c.kind, c.t, c.op, c.count, c.inPlace, c.root)
}

// runColl runs c on w with random inputs and poisoned outputs and checks
// every element of every rank's output against the host reference.
func runColl(t *testing.T, w *world, c collCase, rng *rand.Rand) {
	t.Helper()
	n, es := w.n, c.t.Size()
	b := c.count * es
	inLen, outLen := b, b
	switch c.kind {
	case algo.AllGather:
		outLen = n * b
	case algo.ReduceScatter:
		inLen = n * b
	}
	ins := make([][]byte, n)
	ops := make([][]engine.Op, n)
	var scalars [][]byte // PreMulSum: rank r's factor r+2, host-immediate on even ranks, device memory on odd
	if c.op == gccl.NumBuiltinOps {
		scalars = make([][]byte, n)
	}
	outs := make([]uintptr, n)
	for r := range n {
		ins[r] = make([]byte, inLen)
		reduce.Fill(ins[r], c.t, rng)
		o := engine.Op{Kind: c.kind, Count: c.count, Type: c.t, Op: c.op, Root: c.root, Stream: w.streams[r]}
		if scalars != nil {
			scalars[r] = reduce.Encode(c.t, float64(r+2))
			res, p := engine.ScalarHostImmed, uintptr(unsafe.Pointer(&scalars[r][0]))
			if r%2 == 1 {
				res, p = engine.ScalarDevice, w.buf(t, r, scalars[r])
			}
			var err error
			o.Op, err = w.engines[r].CreatePreMulSum(p, c.t, res)
			require.NoError(t, err)
		}
		if c.inPlace {
			buf := bytes.Repeat([]byte{0xA5}, max(inLen, outLen))
			switch c.kind {
			case algo.AllGather:
				copy(buf[r*b:], ins[r])
			default:
				copy(buf, ins[r])
			}
			p := w.buf(t, r, buf)
			o.Recv = p
			o.Send = p
			switch c.kind {
			case algo.AllGather:
				o.Send = p + uintptr(r*b)
			case algo.ReduceScatter: // NCCL's in-place layout
				o.Recv = p + uintptr(r*b)
			}
		} else {
			o.Send = w.buf(t, r, ins[r])
			o.Recv = w.buf(t, r, bytes.Repeat([]byte{0xA5}, outLen))
		}
		outs[r] = o.Recv
		ops[r] = []engine.Op{o}
	}
	w.launch(t, ops)
	if c.count == 0 {
		return
	}
	var red []byte
	switch {
	case scalars != nil:
		red = reduce.PreMulSumReference(ins, c.t, scalars)
	case c.kind.Reduces():
		red = reduce.Reference(ins, c.t, c.op, 0)
	}
	for r := range n {
		got := w.out(t, r, outs[r], outLen)
		switch c.kind {
		case algo.AllReduce:
			require.NoError(t, reduce.Check(got, red, c.t, n), "%v rank %d", c, r)
		case algo.Reduce:
			if r == c.root {
				require.NoError(t, reduce.Check(got[:b], red, c.t, n), "%v rank %d", c, r)
			}
		case algo.ReduceScatter:
			require.NoError(t, reduce.Check(got, red[r*b:(r+1)*b], c.t, n), "%v rank %d", c, r)
		case algo.AllGather:
			require.Equal(t, bytes.Join(ins, nil), got, "%v rank %d", c, r)
		case algo.Broadcast:
			require.Equal(t, ins[c.root], got, "%v rank %d", c, r)
		}
	}
}

// TestAllReduceBasic: 3 ranks, int32 sums of several sizes, slots small
// enough that the rounds span many slots and both channels.
func TestAllReduceBasic(t *testing.T) {
	w := newWorld(t, 3, 8*4096, 2, 20*time.Second)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, count := range []int{0, 1, 7, 1000, 100003} {
		for _, inPlace := range []bool{false, true} {
			runColl(t, w, collCase{kind: algo.AllReduce, t: gccl.Int32, op: gccl.Sum, count: count, inPlace: inPlace}, rng)
		}
	}
}

// TestCollectives: every collective x int, float and 16-bit types x every
// operator (avg and premulsum included) x counts 0, 1, 7, 1000 x in and
// out of place on 3 ranks with random inputs, poisoned outputs and every
// element checked; count 1000003 for one type per kind (the data crosses
// many slots and both channels).
func TestCollectives(t *testing.T) {
	w := newWorld(t, 3, 8*4096, 2, 30*time.Second)
	rng := rand.New(rand.NewPCG(3, 4))
	types := []gccl.DataType{gccl.Int32, gccl.Uint8, gccl.Int64, gccl.Float32, gccl.Float64, gccl.Float16, gccl.BFloat16}
	ops := append(gccl.RedOps(), gccl.NumBuiltinOps)
	kinds := []algo.Kind{algo.AllReduce, algo.ReduceScatter, algo.Reduce, algo.AllGather, algo.Broadcast}
	for _, kind := range kinds {
		for _, ty := range types {
			kops := ops
			if !kind.Reduces() {
				kops = []gccl.RedOp{gccl.Sum}
			}
			for _, op := range kops {
				for _, count := range []int{0, 1, 7, 1000} {
					for _, inPlace := range []bool{false, true} {
						runColl(t, w, collCase{kind: kind, t: ty, op: op, count: count, inPlace: inPlace, root: (count + int(op)) % 3}, rng)
					}
				}
			}
		}
	}
	big := newWorld(t, 3, 8*64<<10, 2, 60*time.Second)
	for _, kind := range kinds {
		for _, c := range []collCase{{t: gccl.Float32, op: gccl.Sum}, {t: gccl.BFloat16, op: gccl.NumBuiltinOps}, {t: gccl.Int32, op: gccl.Avg, inPlace: true}} {
			c.kind, c.count, c.root = kind, 1000003, 2
			runColl(t, big, c, rng)
		}
	}
}
