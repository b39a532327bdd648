package memalloc

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemAllocRoundsAndAligns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	spy := &spyDriver{Fake: cudafake.New(cudafake.Config{Devices: 3, MemBytes: 512 << 20}),
		rec: 2 * cudafake.Granularity, min: cudafake.Granularity}
	c := gpuDev(t, spy, 1)
	g, _ := AsGPU(c)
	sizes := []int{0, 1, spy.rec - 1, spy.rec, spy.rec + 1, 1 + r.IntN(2*spy.rec)}
	for i, size := range sizes {
		spy.reserves, spy.access = nil, nil
		p, err := Alloc(c, size)
		require.NoError(t, err, "size %d", size)
		want := max(spy.rec, (size+spy.rec-1)/spy.rec*spy.rec)
		n, ok := Size(p)
		require.True(t, ok)
		assert.Equal(t, want, n, "size %d", size)
		require.Equal(t, [][2]int{{want, spy.min}}, spy.reserves, "reserve: recommended size, minimum alignment")
		assert.Zero(t, p%uintptr(spy.min), "address %#x not aligned", p)
		assert.ElementsMatch(t, []cuda.Device{1, 0, 2}, spy.access, "access for the device and both peers")
		assert.Equal(t, cuda.HandlePosixFD, spy.creates[len(spy.creates)-1])
		// Every byte of the rounded allocation is usable: checked in full
		// for the random size, the last 4 KiB for the others.
		at, m := p, n
		if i < len(sizes)-1 {
			at, m = p+uintptr(n-4096), 4096
		}
		data := nettest.RandBytes(r, m)
		require.NoError(t, g.Do(func() error { return spy.MemcpyHtoD(at, data) }))
		got := make([]byte, m)
		require.NoError(t, g.Do(func() error { return spy.MemcpyDtoH(got, at) }))
		require.True(t, bytes.Equal(data, got), "size %d: data differs", size)
		require.NoError(t, Free(p))
		_, _, err = spy.MemGetAddressRange(p)
		require.Error(t, err, "unmapped after MemFree")
		gccltest.RequireCode(t, Free(p), gccl.InvalidUsage)
	}
}

func TestMemAllocPeersAndFabric(t *testing.T) {
	spy := &spyDriver{Fake: cudafake.New(cudafake.Config{Devices: 2, NoPeer: true}), fabric: true}
	c := gpuDev(t, spy, 0)
	p, err := Alloc(c, 100)
	require.NoError(t, err)
	assert.Equal(t, []cuda.Device{0}, spy.access, "no peer access without a peer path")
	assert.Equal(t, []cuda.HandleType{cuda.HandlePosixFD | handleFabric}, spy.creates)
	require.NoError(t, Free(p))

	spy.refuseFab, spy.creates = true, nil
	p, err = Alloc(c, 100)
	require.NoError(t, err, "falls back to POSIX FDs when fabric handles are refused")
	assert.Equal(t, []cuda.HandleType{cuda.HandlePosixFD | handleFabric, cuda.HandlePosixFD}, spy.creates)
	allowed, err := spy.PointerGetAttribute(cuda.PointerAllowedHandle, p)
	require.NoError(t, err)
	assert.Equal(t, uint64(cuda.HandlePosixFD), allowed)
	require.NoError(t, Free(p))
}

func TestMemAllocHost(t *testing.T) {
	c := hostDev(t)
	r := rand.New(rand.NewPCG(3, 4))
	n := 1 + r.IntN(100000)
	p, err := Alloc(c, n)
	require.NoError(t, err)
	reg, ok := device.HostRegionOf(p)
	require.True(t, ok, "host MemAlloc is shared memory")
	assert.Equal(t, p, reg.Base)
	data := nettest.RandBytes(r, n)
	copy(device.HostBytes(p, n), data)
	require.Equal(t, data, device.HostBytes(p, n))
	require.NoError(t, Free(p))
	_, ok = device.HostRegionOf(p)
	assert.False(t, ok)
}

func TestMemAllocMisuse(t *testing.T) {
	c := hostDev(t)
	_, err := Alloc(nil, 10)
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	_, err = Alloc(c, -1)
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	require.NoError(t, Free(0))
	p, err := c.Alloc(64)
	require.NoError(t, err)
	gccltest.RequireCode(t, Free(p), gccl.InvalidArgument) // Device.Alloc memory, not MemAlloc's
	require.NoError(t, c.Free(p))

	q, err := Alloc(c, 4096)
	require.NoError(t, err)
	CountRegistered(q+100, 200, 1)                      // a registration inside it
	gccltest.RequireCode(t, Free(q), gccl.InvalidUsage) // still registered
	CountRegistered(q+100, 200, -1)
	require.NoError(t, Free(q))
	gccltest.RequireCode(t, Free(q), gccl.InvalidUsage)

	// A GPU without VMM support.
	spy := &noVMM{Fake: cudafake.New(cudafake.Config{})}
	_, err = Alloc(gpuDev(t, spy, 0), 10)
	gccltest.RequireCode(t, err, gccl.InvalidUsage)
}

type noVMM struct{ *cudafake.Fake }

func (n *noVMM) DeviceAttribute(a cuda.DeviceAttr, dev cuda.Device) (int, error) {
	if a == cuda.AttrVirtualMemoryManagement {
		return 0, nil
	}
	return n.Fake.DeviceAttribute(a, dev)
}
