package gpu

import (
	"slices"
	"strconv"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSameSettings: ranks whose GPU settings differ are told which setting
// to align, with ErrInvalidUsage; a short entry is a remote error.
func TestSameSettings(t *testing.T) {
	mine := gpuSettings{32, algo.AllAlgorithms, algo.AllProtocols, 16 << 10, gpuplan.LLMax, gpuplan.PushMax, false}
	_, err := sameSettings(mine, append(mine.encode(), 9, 9, 9), 1)
	require.NoError(t, err)
	other := []gpuSettings{mine, mine, mine, mine, mine, mine, mine, mine}
	other[0].MaxCh = 16
	other[1].Protos = 1<<algo.Simple | 1<<algo.LL128 // ^LL
	other[2].Protos = 1 << algo.LL                   // LL forced
	other[3].BulkKiB = 64 << 10
	other[4].LLMax = 64 << 10
	other[5].PushMax = gpuplan.PushMax + 16
	other[6].Algos = algo.AllAlgorithms &^ (1 << algo.ZeroCopy)
	other[7].CheckDesc = true
	for _, o := range other {
		_, err := sameSettings(mine, append(o.encode(), 1, 2), 2)
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "%v", o)
		assert.Contains(t, err.Error(), "rank 2")
		assert.NotEqual(t, mine.String(), o.String(), "the message shows the difference")
		for _, name := range []string{"GCCL_MAX_NCHANNELS", "GCCL_ALGO", "GCCL_PROTO", "GCCL_GPU_BUFFSIZE", "GCCL_GPU_LL_MAX", "GCCL_GPU_PUSH_MAX", "GCCL_GPU_CHECK_DESCRIPTORS", o.String(), mine.String()} {
			assert.Contains(t, err.Error(), name)
		}
	}
	_, err = sameSettings(mine, mine.encode()[:5], 3)
	require.ErrorIs(t, err, gccl.ErrRemote)
	assert.Equal(t, len(mine.encode()), gpuSettingsLen)
}

// TestSettingsFromEnv: the backend's settings are the environment's, as
// gpuplan.NewSettings resolves them (GCCL_GPU_BUFFSIZE clamped and
// rounded, GCCL_ALGO and GCCL_PROTO parsed once by package env).
func TestSettingsFromEnv(t *testing.T) {
	t.Cleanup(func() { env.Reload() })
	for k, v := range map[string]string{"GCCL_MAX_NCHANNELS": "8", "GCCL_GPU_BUFFSIZE": strconv.Itoa(3<<20 + 100<<10),
		"GCCL_GPU_LL_MAX": "4096", "GCCL_GPU_PUSH_MAX": "65536", "GCCL_ALGO": "^zerocopy", "GCCL_PROTO": "LL"} {
		t.Setenv(k, v)
	}
	env.Reload()
	g := launchWorld(t, 1, false)[0].g
	want := gpuplan.Settings{MaxChannels: 8, GridCap: gpuplan.GridMax, BulkBytes: 3<<20 + 64<<10, LLMax: 4096, PushMax: 65536,
		Algos: algo.AllAlgorithms &^ (1 << algo.ZeroCopy), Protos: 1 << algo.LL}
	assert.Equal(t, want, g.set)
	assert.Equal(t, gpuplan.FlagsBytes+gpuplan.DirectBytes+want.BulkBytes, g.set.BufBytes())
}

// TestSharesGPUInProcess: only two ranks on one GPU of one process (same
// host, pid and ordinal) share its SMs without time-slicing.
func TestSharesGPUInProcess(t *testing.T) {
	o := func(host uint64, pid int64, ordinal int32) peermem.Offer {
		return peermem.Offer{HostHash: host, PID: pid, Ordinal: ordinal}
	}
	assert.False(t, sharesGPUInProcess([]peermem.Offer{o(1, 10, 0)}))
	assert.False(t, sharesGPUInProcess([]peermem.Offer{o(1, 10, 0), o(1, 10, 1), o(1, 11, 0), o(2, 10, 0)}))
	assert.True(t, sharesGPUInProcess([]peermem.Offer{o(1, 10, 0), o(1, 11, 0), o(1, 10, 1), o(1, 11, 0)}))
}

// TestSharedGPUGridCap: fake ranks of one process on GPU 0 (132 SMs) hold
// half of its SMs over their count (22 blocks each for 3 ranks), all
// alike; a second communicator on the same GPU gets half of what is left;
// closing them gives the SMs back.
func TestSharedGPUGridCap(t *testing.T) {
	first := launchWorld(t, 3, false)
	for r, x := range first {
		g := x.g
		assert.Equal(t, 22, g.set.GridCap, "rank %d", r)
		assert.Equal(t, 22, g.set.MaxChannels, "rank %d", r)
		assert.Equal(t, 22, g.set.Channels(1<<30), "rank %d", r)
		assert.Equal(t, 22, g.set.P2PChannels(2, 1<<30, g.peerLink[(r+1)%3]), "rank %d: within the kernel cap, not 2x", r)
		assert.Equal(t, slices.Repeat([]topo.LinkKind{topo.LinkSameDevice}, 3), g.peerLink, "rank %d: ranks on one GPU", r)
	}
	second := launchWorld(t, 2, false)
	for r, x := range second {
		assert.Equal(t, (132-66)/4, x.g.set.GridCap, "rank %d", r)
	}
	smTable.Lock()
	assert.Equal(t, 66+2*16, smTable.used[0])
	smTable.Unlock()
}
