package coll_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// TestPreMulSumPerRank is NCCL's example of Σ_r s_r·x_r: 4 ranks, every
// input element r+1, scalars r+2, so every rank gets 2+6+12+20 = 40, for
// AllReduce, ReduceScatter and Reduce with every algorithm, small (staged)
// and large (mapped) sizes, host and device scalars. Every rank destroys
// its operator as soon as the call returns, before the stream runs it
// (NCCL allows it); the operation must not notice.
func TestPreMulSumPerRank(t *testing.T) {
	for _, algo := range []string{"ring", "tree", "direct", "zerocopy"} {
		t.Run(algo, func(t *testing.T) {
			t.Cleanup(func() { env.Reload() })
			t.Setenv("GCCL_ALGO", algo)
			require.Equal(t, algo, env.Reload().Algos.String())
			w := colltest.New(t, 4, nil)
			rng := rand.New(rand.NewPCG(4, 40))
			for _, kind := range []string{"allreduce", "reducescatter", "reduce"} {
				for _, dt := range []gccl.DataType{gccl.Int32, gccl.Float32, gccl.Float16, gccl.Uint64} {
					for _, count := range []int{5, 40000} {
						premulForty(t, w, kind, dt, count, rng)
					}
				}
			}
		})
	}
}

// premulForty runs one case of TestPreMulSumPerRank and checks it.
func premulForty(t *testing.T, w *colltest.World, kind string, dt gccl.DataType, count int, rng *rand.Rand) {
	n, es := w.N(), dt.Size()
	sendCount := count
	if kind == "reducescatter" {
		sendCount = n * count
	}
	recvs := make([][]byte, n)
	for r := range n {
		sp, sb := w.Alloc(t, r, sendCount*es, rng)
		for i := range sendCount {
			copy(sb[i*es:], reduce.Encode(dt, float64(r+1)))
		}
		rp, rb := w.Alloc(t, r, count*es, rng)
		recvs[r] = rb
		p, b := w.Alloc(t, r, es, rng)
		copy(b, reduce.Encode(dt, float64(r+2)))
		op, err := coll.CreatePreMulSum(w.Comms[r], p, dt, []coll.ScalarResidence{coll.ScalarHostImmediate, coll.ScalarDevice}[r%2])
		require.NoError(t, err)
		ops := make([]gccl.RedOp, n)
		ops[r] = op
		c := &rcase{kind: kind, dt: dt, ops: ops, count: count, root: 1}
		require.NoError(t, c.launch(w, r, sp, rp))
		require.NoError(t, coll.DestroyRedOp(w.Comms[r], op))
	}
	w.Sync(t)
	forty := reduce.Encode(dt, 40)
	for r, rb := range recvs {
		if kind == "reduce" && r != 1 {
			continue
		}
		for i := range count {
			require.Equal(t, forty, rb[i*es:(i+1)*es], "%s %v count %d rank %d element %d", kind, dt, count, r, i)
		}
	}
	w.Reset()
}

// TestPreMulSum64BitScalars: 64-bit integer scalars multiply in the type
// modulo 2^64 (a uint64 scalar from 2^63, an int64 one beyond 2^53), on
// every rank a different one.
func TestPreMulSum64BitScalars(t *testing.T) {
	w := colltest.New(t, 3, nil)
	rng := rand.New(rand.NewPCG(64, 1))
	for _, dt := range []gccl.DataType{gccl.Uint64, gccl.Int64} {
		for _, count := range []int{3, 20000} {
			ops, scalars := redOps(t, w, premulSum, dt, count > 3, rng)
			var ck checker
			c := &rcase{kind: "allreduce", dt: dt, ops: ops, scalars: scalars, op: premulSum, count: count}
			c.issue(t, w, &ck, rng)
			ck.run(t, w)
		}
	}
	// One exact case by hand: 1·(2^63+3) + 2·(2^63+5) + 3·(2^63+7) mod 2^64
	// is 6·2^63 + 34 ≡ 34 (through float64 the scalars would round to 2^63).
	in := [][]byte{u64(1), u64(2), u64(3)}
	got := reduce.PreMulSumReference(in, gccl.Uint64, [][]byte{u64(1<<63 + 3), u64(1<<63 + 5), u64(1<<63 + 7)})
	require.Equal(t, uint64(34), binary.LittleEndian.Uint64(got), "%x", got)
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// TestDestroyRedOpRightAfterCall: destroying the operator as soon as the
// call returned leaves the communicator healthy: the operation completes
// with the operator's scalar and later operations run.
func TestDestroyRedOpRightAfterCall(t *testing.T) {
	w := colltest.New(t, 2, nil)
	rng := rand.New(rand.NewPCG(5, 5))
	for round := range 3 {
		premulEight(t, w, rng, fmt.Sprint("round ", round))
	}
	for r, c := range w.Comms {
		require.NoError(t, c.AsyncError(), "rank %d", r)
	}
}

// premulEight is a 2-rank all-reduce of 1 and 2 with scalars 2 and 3 (8).
func premulEight(t *testing.T, w *colltest.World, rng *rand.Rand, what string) {
	recvs := make([][]byte, 2)
	for r := range 2 {
		sp, sb := w.Alloc(t, r, 4*7, rng)
		for i := range 7 {
			copy(sb[4*i:], reduce.Encode(gccl.Int32, float64(r+1)))
		}
		p, b := w.Alloc(t, r, 4, rng)
		copy(b, reduce.Encode(gccl.Int32, float64(r+2)))
		op, err := coll.CreatePreMulSum(w.Comms[r], p, gccl.Int32, coll.ScalarHostImmediate)
		require.NoError(t, err)
		var rp uintptr
		rp, recvs[r] = w.Alloc(t, r, 4*7, rng)
		require.NoError(t, coll.AllReduce(w.Comms[r], sp, rp, 7, gccl.Int32, op, w.Streams[r]))
		require.NoError(t, coll.DestroyRedOp(w.Comms[r], op))
	}
	w.Sync(t)
	for r := range 2 {
		for i := range 7 {
			require.Equal(t, reduce.Encode(gccl.Int32, 8), recvs[r][4*i:4*i+4], "%s rank %d", what, r)
		}
	}
	w.Reset()
}
