package bufreg

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGPUMemAllocRegister runs MemAlloc, Register, shareDesc/Import and
// graph registration on a real GPU (skipped without one; fails with
// GCCL_REQUIRE_GPU=1).
func TestGPUMemAllocRegister(t *testing.T) {
	drv := cudatest.RequireGPU(t, 1)
	d, err := openGPU(drv, 0, 30*time.Second)
	require.NoError(t, err)
	defer d.Close()
	c := &testComm{dev: d, count: 1}
	r := rand.New(rand.NewPCG(31, 32))

	dev, err := drv.DeviceGet(0)
	require.NoError(t, err)
	rec, err := drv.MemGetAllocationGranularity(dev, cuda.HandlePosixFD, true)
	require.NoError(t, err)
	minimum, err := drv.MemGetAllocationGranularity(dev, cuda.HandlePosixFD, false)
	require.NoError(t, err)
	size := 3*rec + 1 + r.IntN(rec)
	p, err := MemAlloc(d, size)
	require.NoError(t, err)
	n, _ := AllocSize(p)
	assert.Zero(t, n%rec, "size rounded to the recommended granularity %d", rec)
	assert.GreaterOrEqual(t, n, size)
	assert.Zero(t, p%uintptr(minimum), "address aligned to the minimum granularity %d", minimum)

	data := randBytes(r, n)
	require.NoError(t, d.CopyIn(p, data))
	off, m := r.IntN(n/2), 1+r.IntN(n/2)
	h, err := Register(c, p+uintptr(off), m)
	require.NoError(t, err)
	reg, o, ok := Lookup(c, p+uintptr(off)+10, m-10)
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

	// Graph registration: held while the graph lives, released after.
	s, err := d.NewStream()
	require.NoError(t, err)
	require.NoError(t, d.Do(func() error { return drv.StreamBeginCapture(cuda.Stream(s), cuda.CaptureModeRelaxed) }))
	gr, goff, ok, err := ForGraph(c, s, p, 4096)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 0, goff)
	var g cuda.Graph
	require.NoError(t, d.Do(func() (err error) { g, err = drv.StreamEndCapture(cuda.Stream(s)); return err }))
	assert.Equal(t, 1, gr.Uses())
	require.NoError(t, d.Do(func() error { return drv.GraphDestroy(g) }))
	eventually(t, "graph registration released", func() bool { return gr.Uses() == 0 })

	// cudaMalloc memory registers too.
	q, err := d.Alloc(1 << 20)
	require.NoError(t, err)
	hq, err := Register(c, q+256, 1000)
	require.NoError(t, err)
	assert.Equal(t, Legacy, hq.Registration().Kind)
	require.NoError(t, Deregister(hq))
	require.NoError(t, d.Free(q))

	require.NoError(t, Deregister(h))
	require.NoError(t, MemFree(p))
	require.NoError(t, d.DestroyStream(s))
}
