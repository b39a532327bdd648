package cudafake

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillU32 is the Go twin of the gccl_fill_u32 kernel.
func fillU32(f *Fake, grid, block cuda.Dim3, a *cuda.Args) error {
	n := int(a.Uint64(1))
	b, err := f.Bytes(uintptr(a.Uint64(0)), 4*n)
	if err != nil {
		return err
	}
	seed := a.Uint32(2)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], seed^uint32(uint64(i)*2654435761))
	}
	return nil
}

func setup(t *testing.T, cfg Config) *Fake {
	f := New(cfg)
	ctx, err := f.PrimaryCtxRetain(0)
	require.NoError(t, err)
	require.NoError(t, f.CtxSetCurrent(ctx))
	return f
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestMemoryAndStreams(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	f := setup(t, Config{Devices: 2, MemBytes: 64 << 20})
	n := 1000 + r.IntN(5000)
	a, err := f.MemAlloc(n)
	require.NoError(t, err)
	b, err := f.MemAlloc(n)
	require.NoError(t, err)
	src := randBytes(r, n)
	require.NoError(t, f.MemcpyHtoD(a, src))
	s, err := f.StreamCreate(cuda.StreamNonBlocking)
	require.NoError(t, err)
	require.NoError(t, f.MemsetD8Async(b, 0xAB, n, s))
	require.NoError(t, f.MemcpyDtoDAsync(b+7, a, n-7, s)) // ordered after the memset
	require.NoError(t, f.StreamSynchronize(s))
	got := make([]byte, n)
	require.NoError(t, f.MemcpyDtoH(got, b))
	assert.Equal(t, []byte{0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB}, got[:7])
	assert.Equal(t, src[:n-7], got[7:])

	_, err = f.Bytes(a+uintptr(n)-1, 2)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidValue), "out of bounds: %v", err)
	assert.True(t, errors.Is(f.MemFree(a+1), gccl.ErrUnhandledCuda))
	free, total, err := f.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, total-2*n, free)
	_, err = f.MemAlloc(64 << 20)
	assert.True(t, errors.Is(err, cuda.ErrorOutOfMemory))
	require.NoError(t, f.MemFree(a))
	require.NoError(t, f.MemFree(b))
	free, _, _ = f.MemGetInfo()
	assert.Equal(t, total, free)

	base, size, err := f.MemGetAddressRange(a)
	assert.Error(t, err, "freed memory has no range (got %#x %d)", base, size)
	require.NoError(t, f.StreamDestroy(s))
	_, err = f.StreamQuery(s)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidHandle))
}

func TestKernelEventsHostFunc(t *testing.T) {
	f := setup(t, Config{})
	f.RegisterKernel("gccl_fill_u32", fillU32)
	m, err := f.ModuleLoadData([]byte("fatbin"))
	require.NoError(t, err)
	fn, err := f.ModuleGetFunction(m, "gccl_fill_u32")
	require.NoError(t, err)
	_, err = f.ModuleGetFunction(m, "nope")
	assert.True(t, errors.Is(err, cuda.ErrorNotFound))

	const n = 4097
	p, err := f.MemAlloc(4 * n)
	require.NoError(t, err)
	s, _ := f.StreamCreate(cuda.StreamNonBlocking)
	e0, _ := f.EventCreate(cuda.EventDefault)
	e1, _ := f.EventCreate(cuda.EventDefault)
	require.NoError(t, f.EventRecord(e0, s))
	release := make(chan struct{})
	var ran atomic.Int32
	require.NoError(t, f.LaunchHostFunc(s, func() { <-release; ran.Add(1) }))
	var args cuda.Args
	args.Ptr(p).U64(n).U32(0xC0FFEE)
	require.NoError(t, f.LaunchKernel(fn, cuda.Dim3{X: 4, Y: 1, Z: 1}, cuda.Dim3{X: 256, Y: 1, Z: 1}, 0, s, &args))
	args.Reset() // the launch keeps its own copy
	require.NoError(t, f.EventRecord(e1, s))
	done, err := f.StreamQuery(s)
	require.NoError(t, err)
	assert.False(t, done, "the host function holds the stream")
	ok, _ := f.EventQuery(e1)
	assert.False(t, ok)
	close(release)
	require.NoError(t, f.EventSynchronize(e1))
	assert.Equal(t, int32(1), ran.Load())
	ms, err := f.EventElapsedTime(e0, e1)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ms, float32(0))
	out := make([]byte, 4*n)
	require.NoError(t, f.MemcpyDtoH(out, p))
	for i := 0; i < n; i++ {
		require.Equal(t, uint32(0xC0FFEE)^uint32(uint64(i)*2654435761), binary.LittleEndian.Uint32(out[4*i:]), "element %d", i)
	}
	assert.True(t, errors.Is(f.LaunchKernel(fn, cuda.Dim3{X: 0, Y: 1, Z: 1}, cuda.Dim3{X: 1, Y: 1, Z: 1}, 0, s, nil), cuda.ErrorInvalidValue))
}

func TestCaptureReplayAndUserObjects(t *testing.T) {
	f := setup(t, Config{})
	s, _ := f.StreamCreate(cuda.StreamNonBlocking)
	p, _ := f.MemAlloc(8)
	var hits atomic.Int32
	require.NoError(t, f.StreamBeginCapture(s, cuda.CaptureModeThreadLocal))
	info, err := f.StreamGetCaptureInfo(s)
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureActive, info.Status)
	require.NoError(t, f.LaunchHostFunc(s, func() { hits.Add(1) }))
	require.NoError(t, f.StreamWriteValue32(s, p, 77, 0))
	_, err = f.StreamQuery(s)
	assert.True(t, errors.Is(err, cuda.ErrorStreamCaptureUnsupported), "no host sync while capturing")
	g, err := f.StreamEndCapture(s)
	require.NoError(t, err)
	assert.Equal(t, info.Graph, g)
	require.NoError(t, f.StreamSynchronize(s))
	assert.Equal(t, int32(0), hits.Load(), "captured work does not run")

	destroyed := make(chan struct{})
	o, err := f.UserObjectCreate(func() { close(destroyed) })
	require.NoError(t, err)
	require.NoError(t, f.GraphRetainUserObject(g, o, 1, true))
	e, err := f.GraphInstantiate(g)
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(g))
	for i := 0; i < 3; i++ {
		require.NoError(t, f.GraphLaunch(e, s))
	}
	require.NoError(t, f.StreamSynchronize(s))
	assert.Equal(t, int32(3), hits.Load())
	b, _ := f.Bytes(p, 4)
	assert.Equal(t, uint32(77), binary.LittleEndian.Uint32(b))
	select {
	case <-destroyed:
		t.Fatal("user object destroyed while the exec still holds it")
	default:
	}
	require.NoError(t, f.GraphExecDestroy(e))
	select {
	case <-destroyed:
	case <-time.After(5 * time.Second):
		t.Fatal("user object destructor never ran")
	}
}

func TestStreamMemops(t *testing.T) {
	f := setup(t, Config{WaitTimeout: 200 * time.Millisecond})
	flag, _ := f.MemAlloc(16)
	s1, _ := f.StreamCreate(cuda.StreamNonBlocking)
	s2, _ := f.StreamCreate(cuda.StreamNonBlocking)
	var order []int
	require.NoError(t, f.StreamWaitValue64(s1, flag+8, 5, cuda.WaitValueGEQ))
	require.NoError(t, f.LaunchHostFunc(s1, func() { order = append(order, 2) }))
	require.NoError(t, f.LaunchHostFunc(s2, func() { order = append(order, 1) }))
	require.NoError(t, f.StreamWriteValue64(s2, flag+8, 6, 0))
	require.NoError(t, f.StreamSynchronize(s1))
	require.NoError(t, f.StreamSynchronize(s2))
	assert.Equal(t, []int{1, 2}, order)
	// A wait nobody satisfies times out instead of hanging, and the error sticks.
	require.NoError(t, f.StreamWaitValue32(s1, flag, 1, cuda.WaitValueEQ))
	err := f.StreamSynchronize(s1)
	assert.True(t, errors.Is(err, cuda.ErrorLaunchTimeout), "%v", err)
	assert.Error(t, f.StreamSynchronize(s1))
	assert.True(t, errors.Is(f.StreamWriteValue32(s2, flag+2, 1, 0), cuda.ErrorInvalidValue), "misaligned")
	assert.True(t, waitHolds(0x80000000, 1, cuda.WaitValueGEQ, 32))
	assert.False(t, waitHolds(0, 0xffffffff, cuda.WaitValueEQ, 32))
	assert.True(t, waitHolds(6, 2, cuda.WaitValueAnd, 32))
	assert.True(t, waitHolds(1, 2, cuda.WaitValueNor, 32))
}

func TestIPCAndVMM(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	f := setup(t, Config{Devices: 2})
	p, _ := f.MemAlloc(4096)
	h, err := f.IpcGetMemHandle(p)
	require.NoError(t, err)
	q, err := f.IpcOpenMemHandle(h, cuda.IpcLazyEnablePeerAccess)
	require.NoError(t, err)
	assert.NotEqual(t, p, q)
	data := randBytes(r, 4096)
	require.NoError(t, f.MemcpyHtoD(p, data))
	got := make([]byte, 4096)
	require.NoError(t, f.MemcpyDtoH(got, q))
	assert.Equal(t, data, got, "the IPC mapping shares the memory")
	require.NoError(t, f.IpcCloseMemHandle(q))
	var bad cuda.IpcMemHandle
	_, err = f.IpcOpenMemHandle(bad, 0)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidValue))

	g, err := f.MemGetAllocationGranularity(1, cuda.HandlePosixFD, false)
	require.NoError(t, err)
	mh, err := f.MemCreate(2*g, 1, cuda.HandlePosixFD)
	require.NoError(t, err)
	fd, err := f.MemExportToShareableHandle(mh)
	require.NoError(t, err)
	imp, err := f.MemImportFromShareableHandle(fd)
	require.NoError(t, err)
	syscall.Close(fd)
	va1, _ := f.MemAddressReserve(2*g, 0)
	va2, _ := f.MemAddressReserve(2*g, 0)
	require.NoError(t, f.MemMap(va1, 2*g, 0, mh))
	require.NoError(t, f.MemMap(va2, g, g, imp)) // the second half only
	_, err = f.Bytes(va1, 1)
	assert.True(t, errors.Is(err, cuda.ErrorIllegalAddress), "no access before MemSetAccess")
	require.NoError(t, f.MemSetAccess(va1, 2*g, 1, cuda.AccessReadWrite))
	require.NoError(t, f.MemSetAccess(va2, g, 1, cuda.AccessReadWrite))
	require.NoError(t, f.MemRelease(mh)) // the mapping keeps it alive
	chunk := randBytes(r, 1000)
	require.NoError(t, f.MemcpyHtoD(va1+uintptr(g)+123, chunk))
	got = make([]byte, 1000)
	require.NoError(t, f.MemcpyDtoH(got, va2+123))
	assert.Equal(t, chunk, got)
	rh, err := f.MemRetainAllocationHandle(va1 + 5)
	require.NoError(t, err)
	require.NoError(t, f.MemRelease(rh))
	attrs, err := f.PointerGetAttributes([]cuda.PointerAttr{cuda.PointerMemoryType, cuda.PointerDeviceOrdinal, cuda.PointerRangeStart}, va1+9)
	require.NoError(t, err)
	assert.Equal(t, []uint64{cuda.MemoryTypeDevice, 1, uint64(va1)}, attrs)
	assert.True(t, errors.Is(f.MemAddressFree(va1, 2*g), cuda.ErrorInvalidValue), "still mapped")
	require.NoError(t, f.MemUnmap(va1, 2*g))
	require.NoError(t, f.MemUnmap(va2, g))
	require.NoError(t, f.MemRelease(imp))
	require.NoError(t, f.MemAddressFree(va1, 2*g))
	_, err = f.MemCreate(g+1, 0, cuda.HandlePosixFD)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidValue))
}

func TestHostMemory(t *testing.T) {
	f := setup(t, Config{})
	h, err := f.MemHostAlloc(256, cuda.HostAllocPortable)
	require.NoError(t, err)
	d, _ := f.MemAlloc(256)
	s, _ := f.StreamCreate(cuda.StreamNonBlocking)
	hb, _ := f.Bytes(h, 256)
	for i := range hb {
		hb[i] = byte(i * 7)
	}
	require.NoError(t, f.MemcpyHtoDAsync(d, h, 256, s))
	require.NoError(t, f.MemsetD32Async(h, 0xDEADBEEF, 64, s))
	require.NoError(t, f.MemcpyDtoHAsync(h+16, d+16, 16, s))
	require.NoError(t, f.StreamSynchronize(s))
	assert.Equal(t, uint32(0xDEADBEEF), binary.LittleEndian.Uint32(hb[0:]))
	for i := 16; i < 32; i++ {
		assert.Equal(t, byte(i*7), hb[i])
	}
	mt, err := f.PointerGetAttribute(cuda.PointerMemoryType, h)
	require.NoError(t, err)
	assert.Equal(t, uint64(cuda.MemoryTypeHost), mt)
	dp, err := f.MemHostGetDevicePointer(h)
	require.NoError(t, err)
	assert.Equal(t, h, dp)
	assert.True(t, errors.Is(f.MemHostRegister(h+8, 8, 0), cuda.ErrorHostMemoryAlreadyRegistered))
	assert.True(t, errors.Is(f.MemHostUnregister(h), cuda.ErrorHostMemoryNotRegistered))
	require.NoError(t, f.MemFreeHost(h))
}

func TestContextsAndPeers(t *testing.T) {
	f := New(Config{Devices: 3})
	_, err := f.MemAlloc(16)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidContext), "no current context")
	c0, _ := f.PrimaryCtxRetain(0)
	c2, _ := f.PrimaryCtxRetain(2)
	require.NoError(t, f.CtxSetCurrent(c0))
	ok, err := f.DeviceCanAccessPeer(0, 2)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, f.CtxEnablePeerAccess(c2))
	assert.True(t, f.PeerEnabled(0, 2))
	assert.False(t, f.PeerEnabled(2, 0))
	_, err = f.DeviceGet(3)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidDevice))
	require.NoError(t, f.PrimaryCtxRelease(2))
	assert.True(t, errors.Is(f.PrimaryCtxRelease(2), cuda.ErrorInvalidContext))
}

// MemGetInfo counts what this fake made, cuMemAlloc and cuMemCreate alike,
// on the device it was made on, until the last reference goes (a mapping
// outlives the handle); IPC-opened and imported memory is not counted again.
func TestMemGetInfoAccounting(t *testing.T) {
	r := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	f := setup(t, Config{Devices: 2, MemBytes: 64 << 20})
	free0, total, err := f.MemGetInfo()
	require.NoError(t, err)
	require.Equal(t, total, free0)
	g, err := f.MemGetAllocationGranularity(0, cuda.HandlePosixFD, false)
	require.NoError(t, err)
	n, k := 1+r.IntN(1<<20), 1+r.IntN(8)
	p, err := f.MemAlloc(n)
	require.NoError(t, err)
	mh, err := f.MemCreate(k*g, 0, cuda.HandlePosixFD)
	require.NoError(t, err)
	other, err := f.MemCreate(g, 1, cuda.HandlePosixFD) // another device's
	require.NoError(t, err)
	free := func() int {
		v, _, err := f.MemGetInfo()
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, free0-n-k*g, free())

	fd, err := f.MemExportToShareableHandle(mh)
	require.NoError(t, err)
	imp, err := f.MemImportFromShareableHandle(fd)
	require.NoError(t, err)
	syscall.Close(fd)
	ih, err := f.IpcGetMemHandle(p)
	require.NoError(t, err)
	q, err := f.IpcOpenMemHandle(ih, cuda.IpcLazyEnablePeerAccess)
	require.NoError(t, err)
	assert.Equal(t, free0-n-k*g, free(), "imports and IPC mappings are not new memory")
	require.NoError(t, f.MemRelease(imp))
	require.NoError(t, f.IpcCloseMemHandle(q))

	va, err := f.MemAddressReserve(k*g, 0)
	require.NoError(t, err)
	require.NoError(t, f.MemMap(va, k*g, 0, mh))
	require.NoError(t, f.MemRelease(mh))
	assert.Equal(t, free0-n-k*g, free(), "the mapping keeps the memory")
	require.NoError(t, f.MemUnmap(va, k*g))
	require.NoError(t, f.MemAddressFree(va, k*g))
	assert.Equal(t, free0-n, free())
	_, err = f.MemCreate((64<<20)/g*g, 0, cuda.HandlePosixFD)
	assert.True(t, errors.Is(err, cuda.ErrorOutOfMemory), "cuMemCreate beyond the free memory")
	require.NoError(t, f.MemFree(p))
	assert.Equal(t, free0, free())
	require.NoError(t, f.MemRelease(other))
}

// TestLive: every allocation counts until it is freed, whichever fake made it.
func TestLive(t *testing.T) {
	f := New(Config{})
	dev, err := f.DeviceGet(0)
	require.NoError(t, err)
	ctx, err := f.PrimaryCtxRetain(dev)
	require.NoError(t, err)
	require.NoError(t, f.CtxSetCurrent(ctx))
	before := Live()
	p, err := f.MemAlloc(4096)
	require.NoError(t, err)
	h, err := f.MemHostAlloc(4096, 0)
	require.NoError(t, err)
	mh, err := f.MemCreate(Granularity, dev, cuda.HandlePosixFD)
	require.NoError(t, err)
	require.Equal(t, before+3, Live())
	require.NoError(t, f.MemFree(p))
	require.NoError(t, f.MemFreeHost(h))
	require.NoError(t, f.MemRelease(mh))
	require.Equal(t, before, Live())
}

// TestP2PAttribute: the fake answers per ordered pair from Config.P2P,
// zero (no link) for pairs not listed, and refuses a device with itself.
func TestP2PAttribute(t *testing.T) {
	f := New(Config{Devices: 3, P2P: map[[2]int]P2PAttrs{{0, 1}: NVLinkAttrs, {1, 2}: PCIeAttrs}})
	get := func(attr cuda.P2PAttr, a, b int) int {
		v, err := f.DeviceP2PAttribute(attr, cuda.Device(a), cuda.Device(b))
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, 1, get(cuda.P2PNativeAtomicSupported, 0, 1))
	assert.Equal(t, 1, get(cuda.P2PCUDAArrayAccessSupported, 0, 1))
	assert.Equal(t, 1, get(cuda.P2PAccessSupported, 1, 2))
	assert.Equal(t, 0, get(cuda.P2PNativeAtomicSupported, 1, 2))
	assert.Equal(t, 0, get(cuda.P2PAccessSupported, 1, 0), "not implied the other way")
	assert.Equal(t, 0, get(cuda.P2PPerformanceRank, 0, 2))
	_, err := f.DeviceP2PAttribute(cuda.P2PAccessSupported, 1, 1)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidDevice), "%v", err)
	_, err = f.DeviceP2PAttribute(cuda.P2PAccessSupported, 0, 3)
	assert.Error(t, err)
	_, err = f.DeviceP2PAttribute(99, 0, 1)
	assert.True(t, errors.Is(err, cuda.ErrorInvalidValue), "%v", err)
}

// TestHostMappedSharesBytes: pinned host memory (cuMemHostAlloc with
// DEVICEMAP) is real host memory: what the host writes through the host
// pointer a kernel sees through the device pointer, and the reverse (the
// GPU network backend's FIFOs rely on it: the proxy reads and writes the
// host view while the ring kernels' twins use the device one).
func TestHostMappedSharesBytes(t *testing.T) {
	f := New(Config{})
	h, err := f.MemHostAlloc(8192, cuda.HostAllocDeviceMap|cuda.HostAllocPortable)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.MemFreeHost(h)) }()
	d, err := f.MemHostGetDevicePointer(h)
	require.NoError(t, err)
	host := device.HostBytes(h, 8192)
	host[4097] = 0x5A
	dev, err := f.Bytes(d, 8192)
	require.NoError(t, err)
	require.Equal(t, byte(0x5A), dev[4097])
	dev[10] = 0xC3
	require.Equal(t, byte(0xC3), host[10])
}
