package gpu

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDescKey: every field the ranks must agree on changes the key; what
// may legitimately differ between ranks (buffers, the root of an unrooted
// collective, a PreMulSum operator's handle) does not.
func TestDescKey(t *testing.T) {
	base := engine.Op{Kind: algo.AllReduce, Count: 1000, Type: gccl.Float32, Op: gccl.Sum, Root: 0, Send: 0x1000, Recv: 0x2000}
	ch := gpuplan.Choice{Kernel: gpuplan.KernelOneShot, Grid: 4, Area: gpuplan.DirectArea, AreaBytes: gpuplan.DirectBytes}
	key := descKey(&base, ch)
	require.NotZero(t, key)
	same := map[string]func(o *engine.Op, c *gpuplan.Choice){
		"buffers":             func(o *engine.Op, _ *gpuplan.Choice) { o.Send, o.Recv = 0x5000, 0x5000 },
		"unrooted root":       func(o *engine.Op, _ *gpuplan.Choice) { o.Root = 3 },
		"nothing (same call)": func(*engine.Op, *gpuplan.Choice) {},
	}
	differ := map[string]func(o *engine.Op, c *gpuplan.Choice){
		"kind":       func(o *engine.Op, _ *gpuplan.Choice) { o.Kind = algo.ReduceScatter },
		"count":      func(o *engine.Op, _ *gpuplan.Choice) { o.Count = 1001 },
		"type":       func(o *engine.Op, _ *gpuplan.Choice) { o.Type = gccl.Int32 },
		"operator":   func(o *engine.Op, _ *gpuplan.Choice) { o.Op = gccl.Max },
		"kernel":     func(_ *engine.Op, c *gpuplan.Choice) { c.Kernel = gpuplan.KernelPush },
		"grid":       func(_ *engine.Op, c *gpuplan.Choice) { c.Grid = 8 },
		"area":       func(_ *engine.Op, c *gpuplan.Choice) { c.Area = gpuplan.BulkArea },
		"area bytes": func(_ *engine.Op, c *gpuplan.Choice) { c.AreaBytes *= 2 },
	}
	for name, change := range same {
		o, c := base, ch
		change(&o, &c)
		assert.Equal(t, key, descKey(&o, c), name)
	}
	for name, change := range differ {
		o, c := base, ch
		change(&o, &c)
		assert.NotEqual(t, key, descKey(&o, c), name)
	}
	premul := base
	premul.Op = gccl.NumBuiltinOps
	assert.NotEqual(t, key, descKey(&premul, ch), "PreMulSum against Sum")
	other7 := premul
	other7.Op = gccl.NumBuiltinOps + 7
	assert.Equal(t, descKey(&premul, ch), descKey(&other7, ch), "two PreMulSum handles")
	bcast := base
	bcast.Kind, bcast.Op = algo.Broadcast, 0
	other := bcast
	other.Root = 1
	assert.NotEqual(t, descKey(&bcast, ch), descKey(&other, ch), "a rooted collective's root")
	other.Root, other.Op = 0, gccl.Max
	assert.Equal(t, descKey(&bcast, ch), descKey(&other, ch), "a broadcast has no operator")
}

// launchRecord is one kernel launch as a stand-in saw it.
type launchRecord struct {
	name   string
	grid   uint32
	key    uint32
	nbytes uint64
}

// TestDescriptorCheckLaunch: every collective kernel gets the operation's
// key, the same on every rank for the same operation and different for a
// different one; with GCCL_GPU_CHECK_DESCRIPTORS the kernels that compare
// no keys themselves (one-shot, push) are preceded by the one-block check
// kernel with that key, and the pipelined ones are not.
func TestDescriptorCheckLaunch(t *testing.T) {
	const n = 2
	red := func(k string) string { return "gccl_" + k + "_i32_sum" }
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			rs := regWorld(t, n)
			var mu sync.Mutex
			seen := make([][]launchRecord, n)
			for r, x := range rs {
				x.g.checkDesc = check
				for _, name := range []string{kernels.AllGather, red(kernels.AllReduceOneShot), red(kernels.AllReducePush), red(kernels.AllReducePipelined)} {
					x.f.RegisterKernel(name, func(_ *cudafake.Fake, grid, _ cuda.Dim3, a *cuda.Args) error {
						c := decodeWholeComm(a.Arg(0))
						mu.Lock()
						defer mu.Unlock()
						seen[r] = append(seen[r], launchRecord{name, grid.X, c.Key, a.Uint64(1)})
						return nil
					})
				}
			}
			counts := []int{1000, 100_000, 1_100_000} // int32: one-shot, push, pipelined
			for _, count := range counts {
				for r, x := range rs {
					buf, err := x.d.Alloc(8 * count)
					require.NoError(t, err)
					t.Cleanup(func() { _ = x.d.Free(buf) })
					require.NoError(t, x.e.Launch([]engine.Op{{Kind: algo.AllReduce, Count: count, Type: gccl.Int32, Op: gccl.Sum,
						Send: buf, Recv: buf + uintptr(4*count), Stream: x.s}}), "rank %d", r)
					require.NoError(t, x.d.Synchronize(x.s), "rank %d", r)
				}
			}
			require.Equal(t, seen[0], seen[1], "both ranks launched the same kernels with the same keys")
			var want []string
			for _, k := range []string{kernels.AllReduceOneShot, kernels.AllReducePush, kernels.AllReducePipelined} {
				if check && k != kernels.AllReducePipelined {
					want = append(want, kernels.AllGather)
				}
				want = append(want, red(k))
			}
			var got []string
			keys := map[uint32]bool{}
			for i, l := range seen[0] {
				got = append(got, l.name)
				if l.name == kernels.AllGather {
					assert.Equal(t, launchRecord{kernels.AllGather, 1, seen[0][i+1].key, 0}, l, "the check kernel: one block, no bytes, the next kernel's key")
					continue
				}
				keys[l.key] = true
			}
			assert.Equal(t, want, got)
			assert.Len(t, keys, len(counts), "each operation its own key")
		})
	}
}
