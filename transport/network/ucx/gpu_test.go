package ucx

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// TestCUDATransfer: where UCX reports CUDA memory support (and a GPU is
// present), a message lands in device memory and leaves from it, and a
// flush of the CUDA region (the read-back) completes. It skips where the
// provider honestly reports no MemCUDA.
func TestCUDATransfer(t *testing.T) {
	requireUCX(t)
	d := cudatest.RequireGPU(t, 1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, err := d.DeviceGet(0)
	require.NoError(t, err)
	cctx, err := d.PrimaryCtxRetain(dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.PrimaryCtxRelease(dev)) }()
	require.NoError(t, d.CtxSetCurrent(cctx))
	t.Setenv("UCX_TLS", "tcp,cuda_copy")
	p := New()
	devs, err := p.Devices()
	require.NoError(t, err)
	t.Logf("devices with UCX_TLS=tcp,cuda_copy: %+v", devs)
	if devs[0].Memory&network.MemCUDA == 0 {
		t.Skip("this UCX reports no CUDA memory support (built without CUDA): the provider offers host memory only")
	}
	const n = 1<<20 + 3
	dptr, err := d.MemAlloc(n)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.MemFree(dptr)) }()
	gpu := network.Region{Ptr: *(*unsafe.Pointer)(unsafe.Pointer(&dptr)), Len: n, Kind: network.MemCUDA}
	s, r := pair(t, p, 0)

	// host -> device
	want := randBytes(77, n)
	sb := newBuffer(t, s, n)
	copy(sb.b, want)
	poison := bytes.Repeat([]byte{0xa5}, n)
	require.NoError(t, d.MemcpyHtoD(dptr, poison))
	rm, err := r.Register(gpu)
	require.NoError(t, err)
	rq, err := r.Irecv(gpu, rm, 1)
	require.NoError(t, err)
	sq, err := s.Isend(sb.region(n), sb.m, 1)
	require.NoError(t, err)
	got, err := finish(t, sq, rq)
	require.NoError(t, err)
	require.Equal(t, n, got[1])
	fq, err := r.Flush(gpu, rm)
	require.NoError(t, err)
	_, err = finish(t, fq)
	require.NoError(t, err)
	back := make([]byte, n)
	require.NoError(t, d.MemcpyDtoH(back, dptr))
	require.True(t, bytes.Equal(want, back), "device memory differs from what was sent")
	require.NoError(t, r.Deregister(rm))

	// device -> host
	sm, err := s.Register(gpu)
	require.NoError(t, err)
	rb := newBuffer(t, r, n)
	rq, err = r.Irecv(rb.region(n), rb.m, 2)
	require.NoError(t, err)
	sq, err = s.Isend(gpu, sm, 2)
	require.NoError(t, err)
	_, err = finish(t, sq, rq)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, rb.b), "host memory differs from the device's")
	require.NoError(t, s.Deregister(sm))
}
