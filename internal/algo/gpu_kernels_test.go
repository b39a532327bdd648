package algo_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGPUMirrorsKernels pins what algo restates about the kernels (limits,
// area sizes) to package kernels, which pins them to the CUDA sources.
func TestGPUMirrorsKernels(t *testing.T) {
	assert.Equal(t, kernels.MaxRanks, algo.GPUMaxRanks)
	assert.Equal(t, kernels.MaxChannels, algo.GPUGridMax)
	assert.Equal(t, kernels.Threads, algo.GPUThreads)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		b, n := rng.IntN(64<<20), 1+rng.IntN(kernels.MaxRanks)
		require.Equal(t, kernels.OneShotScratchBytes(b, n), algo.LLScratchBytes(b, n), "%d bytes, %d ranks", b, n)
		require.Equal(t, kernels.PushScratchBytes(b, n), algo.PushScratchBytes(b, n), "%d bytes, %d ranks", b, n)
	}
}

// TestGPUFamiliesAreKernels: every family Family names is a kernel of
// package kernels that the fatbin has an entry point for, and the
// reduction kinds name reduction kernels.
func TestGPUFamiliesAreKernels(t *testing.T) {
	entries := map[string]bool{"copy": true, "none": true}
	for _, e := range kernels.EntryPoints() {
		entries[e] = true
	}
	want := map[algo.GPUKernel]map[algo.Kind]string{
		algo.KernelOneShot: {algo.AllReduce: kernels.AllReduceOneShot, algo.Broadcast: kernels.BroadcastOneShot,
			algo.Reduce: kernels.ReduceOneShot, algo.AllGather: kernels.AllGatherOneShot, algo.ReduceScatter: kernels.ReduceScatterOneShot},
		algo.KernelPush: {algo.AllReduce: kernels.AllReducePush},
		algo.KernelPipelined: {algo.AllReduce: kernels.AllReducePipelined, algo.Broadcast: kernels.BroadcastStaged,
			algo.Reduce: kernels.ReduceStaged, algo.AllGather: kernels.AllGatherStaged, algo.ReduceScatter: kernels.ReduceScatterStaged},
		algo.KernelZeroCopy: {algo.AllReduce: kernels.AllReduceTwoShot, algo.Broadcast: kernels.Broadcast,
			algo.AllGather: kernels.AllGather, algo.ReduceScatter: kernels.ReduceScatter},
		algo.KernelP2P: {algo.P2PSend: kernels.P2P, algo.P2PRecv: kernels.P2P},
	}
	for k, kinds := range want {
		for kind := algo.AllReduce; kind.Valid(); kind++ {
			assert.Equal(t, kinds[kind], k.Family(kind), "%v %v", k, kind)
		}
	}
	for k := algo.KernelNone; k <= algo.KernelViaHost; k++ {
		for kind := algo.AllReduce; kind.Valid(); kind++ {
			f := k.Family(kind)
			if f == "" {
				continue
			}
			if kind.Reduces() && k != algo.KernelNone && k != algo.KernelCopy {
				name, err := kernels.ReductionName(f, gccl.Float32, gccl.Sum)
				require.NoError(t, err, "%v %v: %s", k, kind, f)
				f = name
			}
			assert.True(t, entries[f], "%v %v: %s is no entry point", k, kind, f)
		}
	}
}
