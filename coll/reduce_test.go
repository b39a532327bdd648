package coll_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// rcase is one reducing collective on every rank of a world.
type rcase struct {
	kind    string // "allreduce", "reduce" or "reducescatter"
	dt      gccl.DataType
	ops     []gccl.RedOp // per rank
	scalars [][]byte     // PreMulSum's, per rank; nil otherwise
	op      gccl.RedOp   // the operator Reference computes
	count   int
	inPlace bool
	root    int
}

func (c *rcase) String() string {
	return fmt.Sprintf("%s %v op=%v count=%d inplace=%v root=%d", c.kind, c.dt, c.op, c.count, c.inPlace, c.root)
}

// issue allocates and fills every rank's buffers, launches the case on
// every rank and registers the checks of its results with ck.
func (c *rcase) issue(t *testing.T, w *colltest.World, ck *checker, rng *rand.Rand) {
	n, es := w.N(), c.dt.Size()
	cb := c.count * es
	sendBytes := cb
	if c.kind == "reducescatter" {
		sendBytes = n * cb
	}
	inputs := make([][]byte, n)
	recvs := make([][]byte, n)
	before := make([][]byte, n) // non-root Reduce: recvbuff must stay as it was
	for r := range n {
		sp, sb, in := filled(t, w, r, sendBytes, c.dt, rng)
		inputs[r] = in
		rp, rb := sp, sb
		switch {
		case c.inPlace && c.kind == "reducescatter":
			rp, rb = sp+uintptr(r*cb), sb[r*cb:(r+1)*cb]
		case !c.inPlace:
			rp, rb = w.Alloc(t, r, cb, rng)
		}
		recvs[r], before[r] = rb, append([]byte(nil), rb...)
		require.NoError(t, c.launch(w, r, sp, rp), "%v rank %d", c, r)
	}
	ck.add(func() error {
		want := reference(inputs, c.dt, c.op, c.scalars)
		for r := range n {
			var err error
			switch {
			case c.kind == "reducescatter":
				err = reduce.Check(recvs[r], want[r*cb:(r+1)*cb], c.dt, n)
			case c.kind == "reduce" && r != c.root:
				err = same("non-root recvbuff", recvs[r], before[r])
			default:
				err = reduce.Check(recvs[r], want, c.dt, n)
			}
			if err != nil {
				return fmt.Errorf("%v nranks=%d rank %d: %w", c, n, r, err)
			}
		}
		return nil
	})
}

func (c *rcase) launch(w *colltest.World, r int, send, recv uintptr) error {
	cm, s := w.Comms[r], w.Streams[r]
	switch c.kind {
	case "allreduce":
		return coll.AllReduce(cm, send, recv, c.count, c.dt, c.ops[r], s)
	case "reduce":
		return coll.Reduce(cm, send, recv, c.count, c.dt, c.ops[r], c.root, s)
	}
	return coll.ReduceScatter(cm, send, recv, c.count, c.dt, c.ops[r], s)
}

// reduceMatrix runs every reducing collective × every data type × every
// operator × in place or not × counts on w, roots varying.
func reduceMatrix(t *testing.T, w *colltest.World, counts []int, rng *rand.Rand) {
	n := w.N()
	var ck checker
	for _, kind := range []string{"allreduce", "reduce", "reducescatter"} {
		for _, dt := range gccl.DataTypes() {
			for oi, op := range allOps {
				ops, scalars := redOps(t, w, op, dt, oi%2 == 1, rng)
				for ci, count := range counts {
					for _, inPlace := range []bool{false, true} {
						c := &rcase{kind: kind, dt: dt, ops: ops, scalars: scalars, op: op,
							count: count, inPlace: inPlace, root: (oi + ci) % n}
						c.issue(t, w, &ck, rng)
					}
				}
			}
			ck.run(t, w)
		}
	}
}

func TestReduceMatrix(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprint("nranks=", n), func(t *testing.T) {
			counts := smallCounts(n)
			if testing.Short() && n == 4 {
				counts = []int{n - 1, 1031}
				t.Logf("-short: 4 ranks run counts %v only; the full run and test/ cover the rest", counts)
			}
			reduceMatrix(t, colltest.New(t, n, nil), counts, rand.New(rand.NewPCG(uint64(n), 1)))
		})
	}
}

// TestReduceEightRanks: the subset run with 8 ranks (every type, Sum and
// PreMulSum, a count not a multiple of 8).
func TestReduceEightRanks(t *testing.T) {
	w := colltest.New(t, 8, nil)
	rng := rand.New(rand.NewPCG(8, 1))
	var ck checker
	for _, kind := range []string{"allreduce", "reduce", "reducescatter"} {
		for _, dt := range gccl.DataTypes() {
			for _, op := range []gccl.RedOp{gccl.Sum, premulSum, gccl.Avg} {
				ops, scalars := redOps(t, w, op, dt, false, rng)
				for i, count := range []int{7, 1001} {
					c := &rcase{kind: kind, dt: dt, ops: ops, scalars: scalars, op: op, count: count, inPlace: i == 1, root: 5}
					c.issue(t, w, &ck, rng)
				}
			}
		}
		ck.run(t, w)
	}
}

// TestReduceLarge: 1000003 elements (several pipeline chunks, an odd tail)
// for a few types, on 4 ranks.
func TestReduceLarge(t *testing.T) {
	type big struct {
		kind string
		dt   gccl.DataType
		op   gccl.RedOp
	}
	cases := []big{{"allreduce", gccl.Float32, gccl.Sum}, {"reducescatter", gccl.Int8, gccl.Max},
		{"reduce", gccl.BFloat16, premulSum}}
	w := colltest.New(t, 4, nil)
	rng := rand.New(rand.NewPCG(4, 2))
	for i, b := range cases {
		var ck checker
		ops, scalars := redOps(t, w, b.op, b.dt, false, rng)
		c := &rcase{kind: b.kind, dt: b.dt, ops: ops, scalars: scalars, op: b.op, count: 1000003, inPlace: i%2 == 0, root: i % 4}
		c.issue(t, w, &ck, rng)
		ck.run(t, w)
	}
}
