package coll_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/require"
)

// sized is one message size of TestStepSchedulesAroundTheRing.
type sized struct {
	dt    gccl.DataType
	count int
}

// aroundRing are the sizes that stress a shared-memory ring of ring bytes:
// one element below, at and one byte above it (int8: issue 16's case), and
// one element past three rings. Every count is also the size of one direct
// message (a rank's part of AllGather and ReduceScatter, the whole buffer
// of the others). Wide types keep the element count, which is what the
// checks cost under -race, low.
func aroundRing(ring int) []sized {
	return []sized{{gccl.Int32, ring/4 - 1}, {gccl.Float64, ring / 8}, {gccl.Int8, ring + 1},
		{gccl.Float32, 3*ring/4 + 1}}
}

// ringMatrix runs AllGather and Broadcast, and with reductions the
// reducing collectives too, in place and out of place, every size with
// varying operators and roots, on w (one algorithm's world), then checks
// every element of every rank's result.
func ringMatrix(t *testing.T, w *colltest.World, sizes []sized, reductions bool, rng *rand.Rand) {
	n := w.N()
	kinds := []string{"allreduce", "reduce", "reducescatter"}
	if !reductions {
		kinds = nil
	}
	var ck checker
	for i, s := range sizes {
		for _, inPlace := range []bool{false, true} {
			allGather(t, w, &ck, s.dt, s.count, inPlace, rng)
			broadcast(t, w, &ck, s.dt, s.count, i%n, inPlace, rng)
			for k, kind := range kinds {
				op := allOps[(i+k)%len(allOps)]
				ops, scalars := redOps(t, w, op, s.dt, false, rng)
				c := &rcase{kind: kind, dt: s.dt, ops: ops, scalars: scalars, op: op,
					count: s.count, inPlace: inPlace, root: (i + 1) % n}
				c.issue(t, w, &ck, rng)
			}
			ck.run(t, w)
		}
	}
}

// TestStepSchedulesAroundTheRing runs every collective with each step
// schedule (GCCL_ALGO=ring, tree, direct: zero-copy excluded) over the
// shared-memory rings, in and out of place, with messages around the
// ring's size (GCCL_BUFFSIZE) and three times it, on 2, 3 and 4 ranks:
// a send larger than the ring completes only once the peer receives, so a
// schedule that waits for its own sends before receiving hangs there
// (issue 16: in-place direct AllGather past 2 MiB). A small ring runs the
// whole matrix cheaply; the default and a larger ring run the collectives
// that only move data (the reducing ones cost seconds there under -race)
// one byte past the ring. Deadlines are short, so a hang fails in
// seconds.
func TestStepSchedulesAroundTheRing(t *testing.T) {
	type setting struct {
		buffSize string // GCCL_BUFFSIZE; "" = the default (named "default")
		ring     int    // its ring's bytes
		nranks   []int
		sizes    []sized
		reduces  bool // the reducing collectives too
	}
	small, def, large := 32<<10, env.DefaultBuffSize, 3<<20
	settings := []setting{
		{"32K", small, []int{2, 3, 4}, aroundRing(small), true},
		{"", def, []int{2, 3}, []sized{{gccl.Int8, def + 1}}, false},
		{"3M", large, []int{2}, []sized{{gccl.Int8, large + 1}}, false},
	}
	for _, set := range settings {
		for _, a := range []string{"ring", "tree", "direct"} {
			for _, n := range set.nranks {
				name := fmt.Sprintf("buffsize=%s/%s/nranks=%d", cmp.Or(set.buffSize, "default"), a, n)
				t.Run(name, func(t *testing.T) {
					withEnv(t, "NCCL_BUFFSIZE", "")
					require.Equal(t, set.ring, withEnv(t, "GCCL_BUFFSIZE", set.buffSize).BuffSize)
					require.Equal(t, a, withEnv(t, "GCCL_ALGO", a).Algos.String())
					w := colltest.New(t, n, &comm.Config{Timeout: 10 * time.Second})
					ringMatrix(t, w, set.sizes, set.reduces, rand.New(rand.NewPCG(uint64(n), uint64(set.ring))))
				})
			}
		}
	}
}
