package gpuplan_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMirrorsKernels pins what gpuplan restates about the kernels (limits,
// area sizes) to package kernels, which pins them to the CUDA sources.
func TestMirrorsKernels(t *testing.T) {
	assert.Equal(t, kernels.MaxRanks, gpuplan.MaxRanks)
	assert.Equal(t, kernels.MaxChannels, gpuplan.GridMax)
	assert.Equal(t, kernels.Threads, gpuplan.Threads)
	assert.Equal(t, kernels.CopyGridMax, gpuplan.CopyGridMax)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		b, n := rng.IntN(64<<20), 1+rng.IntN(kernels.MaxRanks)
		require.Equal(t, kernels.OneShotScratchBytes(b, n), gpuplan.LLScratchBytes(b, n), "%d bytes, %d ranks", b, n)
		require.Equal(t, kernels.PushScratchBytes(b, n), gpuplan.PushScratchBytes(b, n), "%d bytes, %d ranks", b, n)
	}
}

// TestFamiliesAreKernels: every family Family names is a kernel of
// package kernels that the fatbin has an entry point for, and the
// reduction kinds name reduction kernels.
func TestFamiliesAreKernels(t *testing.T) {
	entries := map[string]bool{"copy": true, "none": true}
	for _, e := range kernels.EntryPoints() {
		entries[e] = true
	}
	want := map[gpuplan.Kernel]map[algo.Kind]string{
		gpuplan.KernelOneShot: {algo.AllReduce: kernels.AllReduceOneShot, algo.Broadcast: kernels.BroadcastOneShot,
			algo.Reduce: kernels.ReduceOneShot, algo.AllGather: kernels.AllGatherOneShot, algo.ReduceScatter: kernels.ReduceScatterOneShot},
		gpuplan.KernelPush: {algo.AllReduce: kernels.AllReducePush},
		gpuplan.KernelPipelined: {algo.AllReduce: kernels.AllReducePipelined, algo.Broadcast: kernels.BroadcastStaged,
			algo.Reduce: kernels.ReduceStaged, algo.AllGather: kernels.AllGatherStaged, algo.ReduceScatter: kernels.ReduceScatterStaged},
		gpuplan.KernelZeroCopy: {algo.AllReduce: kernels.AllReduceTwoShot, algo.Broadcast: kernels.Broadcast,
			algo.AllGather: kernels.AllGather, algo.ReduceScatter: kernels.ReduceScatter},
		gpuplan.KernelP2P: {algo.P2PSend: kernels.P2P, algo.P2PRecv: kernels.P2P},
		gpuplan.KernelSMCopy: {algo.AllReduce: kernels.Copy, algo.Broadcast: kernels.Copy, algo.Reduce: kernels.Copy,
			algo.AllGather: kernels.Copy, algo.ReduceScatter: kernels.Copy},
	}
	for k, kinds := range want {
		for kind := algo.AllReduce; kind.Valid(); kind++ {
			assert.Equal(t, kinds[kind], k.Family(kind), "%v %v", k, kind)
		}
	}
	for k := gpuplan.KernelNone; k <= gpuplan.KernelViaHost; k++ {
		for kind := algo.AllReduce; kind.Valid(); kind++ {
			f := k.Family(kind)
			if f == "" {
				continue
			}
			if kind.Reduces() && k != gpuplan.KernelNone && k != gpuplan.KernelCopy && k != gpuplan.KernelSMCopy {
				name, err := kernels.ReductionName(f, gccl.Float32, gccl.Sum)
				require.NoError(t, err, "%v %v: %s", k, kind, f)
				f = name
			}
			assert.True(t, entries[f], "%v %v: %s is no entry point", k, kind, f)
		}
	}
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "Kernel(99)", gpuplan.Kernel(99).String())
	assert.Equal(t, "Area(99)", gpuplan.Area(99).String())
	assert.Equal(t, "RegLookup(9)", gpuplan.RegLookup(9).String())
	assert.Equal(t, "oneshot grid=4 area=direct/16777216",
		gpuplan.Choice{Kernel: gpuplan.KernelOneShot, Grid: 4, Area: gpuplan.DirectArea, AreaBytes: gpuplan.DirectBytes}.String())
}
