package choose

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/internal/engine/host"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestViaHost: a GPU communicator goes through host memory when p2p is
// disabled, when it has more ranks than the kernels address, or when any
// peer is on another host; otherwise it takes the GPU backend.
func TestViaHost(t *testing.T) {
	viaHost := func(p2pDisabled bool, me int, hashes []uint64) bool {
		return !gpuplan.PeersMapped(len(hashes), p2pDisabled, oneHost(me, hashes))
	}
	same := []uint64{7, 7, 7}
	assert.False(t, viaHost(false, 1, same))
	assert.True(t, viaHost(true, 1, same), "GCCL_P2P_DISABLE")
	assert.True(t, viaHost(false, 0, []uint64{7, 7, 9}), "a peer on another host")
	assert.True(t, viaHost(false, 2, []uint64{7, 7, 9}), "this rank on another host")
	many := make([]uint64, kernels.MaxRanks+1)
	for i := range many {
		many[i] = 7
	}
	assert.True(t, viaHost(false, 0, many), "more ranks than the kernels address")
	assert.False(t, viaHost(false, 0, many[:kernels.MaxRanks]))
	assert.True(t, viaHost(false, 0, []uint64{0, 0}), "an unknown host (hash 0) is another host")
}

// TestHostDevice: a host device gets the host backend.
func TestHostDevice(t *testing.T) {
	d, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	s := engine.Setup{Rank: 0, NRanks: 1, Boot: enginetest.NewNet(1).Rank(0), Device: d, Timeout: 10 * time.Second}
	b, err := Backend(Config{Transport: enginetest.Identity(), Algos: algo.AllAlgorithms})(context.Background(), s)
	require.NoError(t, err)
	_, isHost := b.(*host.Backend)
	assert.True(t, isHost, "%T", b)
	require.NoError(t, b.Close(false))
}

// TestGPUBusID: the GPU-via-host endpoint learns its GPU's PCI bus id
// from the driver's attributes; a host device has none.
func TestGPUBusID(t *testing.T) {
	dv, err := devlink.OpenGPU(cudafake.New(cudafake.Config{Devices: 2}), 1, 10*time.Second)
	require.NoError(t, err)
	gpu := dv.(device.Device)
	t.Cleanup(func() { dv.(*device.CUDADevice).Close() })
	assert.Equal(t, "0000:11:00.0", gpuBusID(engine.Setup{Device: gpu, Log: slog.Default()}), "cudafake puts GPU n on bus 0x10+n")

	h, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	assert.Empty(t, gpuBusID(engine.Setup{Device: h, Log: slog.Default()}))
}

// TestNetOrViaHost: among the communicators whose peers cannot map each
// other's memory, only GCCL_P2P_DISABLE on one host (within the kernels'
// ranks) goes via the host; a peer on another host, or more ranks than
// the kernels address, takes the GPU network backend.
func TestNetOrViaHost(t *testing.T) {
	assert.True(t, viaHost(3, true, true), "GCCL_P2P_DISABLE on one host")
	assert.False(t, viaHost(3, true, false), "GCCL_P2P_DISABLE across hosts")
	assert.False(t, viaHost(3, false, false), "a peer on another host")
	assert.False(t, viaHost(kernels.MaxRanks+1, false, true), "more ranks than the kernels address")
	assert.False(t, viaHost(kernels.MaxRanks+1, true, true), "more ranks than the kernels address, p2p off")
}
