package gpu

import (
	"strconv"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLLPolicy: GCCL_PROTO decides whether the all-reduce's LL one-shot
// path may run and whether it runs past the size threshold.
func TestLLPolicy(t *testing.T) {
	for _, tc := range []struct {
		proto           string
		allowed, forced bool
	}{
		{"", true, false},
		{"LL", true, true},
		{" ll ", true, true},
		{"LL,LL128", true, true},
		{"Simple", false, false},
		{"LL128,Simple", false, false},
		{"LL,Simple", true, false},
		{"simple, ll", true, false},
		{"^LL", false, false},
		{"^Simple", true, true},
		{"^LL128", true, false},
		{"^LL,Simple", false, false},
	} {
		allowed, forced := llPolicy(tc.proto)
		assert.Equal(t, tc.allowed, allowed, "GCCL_PROTO=%q allowed", tc.proto)
		assert.Equal(t, tc.forced, forced, "GCCL_PROTO=%q forced", tc.proto)
	}
}

// TestSameSettings: ranks whose GPU settings differ are told which setting
// to align, with ErrInvalidUsage; a short entry is a remote error.
func TestSameSettings(t *testing.T) {
	mine := gpuSettings{32, 4, true, false, 16 << 10, gpuLLMax, gpuPushMax}
	_, err := sameSettings(mine, append(mine.encode(), 9, 9, 9), 1)
	require.NoError(t, err)
	smaller := mine
	smaller.SharedCh = 2 // another GPU model: not a disagreement, the smallest applies
	theirs, err := sameSettings(mine, smaller.encode(), 1)
	require.NoError(t, err)
	assert.Equal(t, smaller, theirs)
	other := []gpuSettings{mine, mine, mine, mine, mine, mine}
	other[0].MaxCh = 16
	other[1].LLAllowed = false
	other[2].LLForce = true
	other[3].BulkKiB = 64 << 10
	other[4].LLMax = 64 << 10
	other[5].PushMax = gpuPushMax + 16
	for _, o := range other {
		_, err := sameSettings(mine, append(o.encode(), 1, 2), 2)
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "%v", o)
		assert.Contains(t, err.Error(), "rank 2")
		for _, name := range []string{"GCCL_MAX_NCHANNELS", "GCCL_GPU_BUFFSIZE", "GCCL_GPU_PUSH_MAX", o.String(), mine.String()} {
			assert.Contains(t, err.Error(), name)
		}
	}
	_, err = sameSettings(mine, mine.encode()[:5], 3)
	require.ErrorIs(t, err, gccl.ErrRemote)
	assert.Equal(t, len(mine.encode()), gpuSettingsLen)
}

// TestBulkBytes: GCCL_GPU_BUFFSIZE is clamped and rounded; unset is the default.
func TestBulkBytes(t *testing.T) {
	t.Cleanup(func() { env.Reload() })
	for _, c := range []struct{ set, want int }{
		{0, gpuBulkBytes}, {1, gpuBulkMin}, {64<<20 + 5, 64 << 20}, {3<<20 + 100<<10, 3<<20 + 64<<10}, {4 << 30, gpuBulkMax},
	} {
		t.Setenv("GCCL_GPU_BUFFSIZE", strconv.Itoa(c.set))
		env.Reload()
		assert.Equal(t, c.want, bulkBytes(), "GCCL_GPU_BUFFSIZE=%d", c.set)
	}
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

// TestSharedGPUGridCap: fake ranks of one process on GPU 0 (132 SMs) cap
// their grids at 132/gpuSharedKernels channels, all alike.
func TestSharedGPUGridCap(t *testing.T) {
	for r, x := range launchWorld(t, 3, false) {
		g := x.g
		assert.Equal(t, 132/gpuSharedKernels, g.maxCh, "rank %d", r)
		assert.Equal(t, g.maxCh, g.channels(1<<30), "rank %d", r)
	}
}
