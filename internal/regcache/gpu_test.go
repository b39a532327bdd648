package regcache

import (
	"bytes"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/internal/nettest"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGPUMemAllocRegister runs memalloc.Alloc, Register, shareDesc/Import
// and graph registration on a real GPU (skipped without one; fails with
// GCCL_REQUIRE_GPU=1).
func TestGPUMemAllocRegister(t *testing.T) {
	drv := cudatest.RequireGPU(t, 1)
	d, err := openGPU(drv, 0, 30*time.Second)
	require.NoError(t, err)
	defer d.Close()
	c := newCache(t, Owner{Device: d, NRanks: 1})
	r := rand.New(rand.NewPCG(31, 32))

	dev, err := drv.DeviceGet(0)
	require.NoError(t, err)
	rec, err := drv.MemGetAllocationGranularity(dev, cuda.HandlePosixFD, true)
	require.NoError(t, err)
	minimum, err := drv.MemGetAllocationGranularity(dev, cuda.HandlePosixFD, false)
	require.NoError(t, err)
	size := 3*rec + 1 + r.IntN(rec)
	p, err := memalloc.Alloc(d, size)
	require.NoError(t, err)
	n, _ := memalloc.Size(p)
	assert.Zero(t, n%rec, "size rounded to the recommended granularity %d", rec)
	assert.GreaterOrEqual(t, n, size)
	assert.Zero(t, p%uintptr(minimum), "address aligned to the minimum granularity %d", minimum)

	data := nettest.RandBytes(r, n)
	require.NoError(t, d.CopyIn(p, data))
	off, m := r.IntN(n/2), 1+r.IntN(n/2)
	h, err := c.Register(p+uintptr(off), m)
	require.NoError(t, err)
	reg, o, ok := c.Lookup(p+uintptr(off)+10, m-10)
	require.True(t, ok)
	assert.Equal(t, 10, o)
	assert.Equal(t, VMM, reg.Kind)
	e, err := reg.share()
	require.NoError(t, err)
	mp, err := mapShared(d, e) // a second mapping of the same memory
	require.NoError(t, err)
	require.NoError(t, e.Close())
	got := make([]byte, m)
	require.NoError(t, d.CopyOut(got, mp.Ptr))
	require.True(t, bytes.Equal(data[off:off+m], got), "imported mapping shows the same bytes")
	require.NoError(t, mp.Close())

	// Graph registration (collective, here over one rank): no handle, gone
	// with its last hold.
	gc := newCache(t, Owner{Device: d, NRanks: 1, Net: newGatherNet(1)[0]})
	gr, err := gc.RegisterGraph(p, 4096)
	require.NoError(t, err)
	assert.True(t, gr.Graph)
	assert.Zero(t, gc.Collective(), "graph registrations are not counted")
	release, err := gr.Acquire()
	require.NoError(t, err)
	release()
	_, _, ok = gc.Lookup(p, 4096)
	assert.False(t, ok, "released with its last hold")

	// cudaMalloc memory registers too.
	q, err := d.Alloc(1 << 20)
	require.NoError(t, err)
	hq, err := c.Register(q+256, 1000)
	require.NoError(t, err)
	assert.Equal(t, Legacy, hq.Registration().Kind)
	require.NoError(t, Deregister(hq))
	require.NoError(t, d.Free(q))

	require.NoError(t, Deregister(h))
	require.NoError(t, memalloc.Free(p))
}
