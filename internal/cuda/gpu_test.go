package cuda_test

// These tests exercise every wrapped driver call on a real GPU. They skip
// without one (and fail with GCCL_REQUIRE_GPU=1). Build here with
// `go test -c -o cuda.test ./internal/cuda`, run on the GPU machine with
// `GCCL_REQUIRE_GPU=1 GCCL_REQUIRE_FATBIN=1 ./cuda.test -test.v`.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpu sets up device 0's primary context on a locked thread.
func gpu(t *testing.T, n int) (cuda.Driver, cuda.Device, cuda.Context) {
	d := cudatest.RequireGPU(t, n)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	dev, err := d.DeviceGet(0)
	require.NoError(t, err)
	ctx, err := d.PrimaryCtxRetain(dev)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.PrimaryCtxRelease(dev)) })
	require.NoError(t, d.CtxSetCurrent(ctx))
	return d, dev, ctx
}

func random(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b9))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// view is a []byte over pinned or registered host memory at p.
func view(p uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

func TestGPUDeviceAndMemory(t *testing.T) {
	d, dev, ctx := gpu(t, 1)
	v, err := d.Version()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v, 12000)
	cur, err := d.CtxGetCurrent()
	require.NoError(t, err)
	assert.Equal(t, ctx, cur)
	major, err := d.DeviceAttribute(cuda.AttrComputeCapabilityMajor, dev)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, major, 8)
	name, err := d.DeviceName(dev)
	require.NoError(t, err)
	uuid, err := d.DeviceUUID(dev)
	require.NoError(t, err)
	assert.NotEqual(t, cuda.UUID{}, uuid)
	t.Logf("driver %d, %s sm_%d, uuid %x", v, name, major, uuid)
	free, total, err := d.MemGetInfo()
	require.NoError(t, err)
	assert.True(t, free > 0 && free <= total)

	const n = 1<<20 + 13
	p, err := d.MemAlloc(n)
	require.NoError(t, err)
	defer d.MemFree(p)
	src := random(1, n)
	require.NoError(t, d.MemcpyHtoD(p, src))
	got := make([]byte, n)
	require.NoError(t, d.MemcpyDtoH(got, p))
	require.Equal(t, src, got)
	base, size, err := d.MemGetAddressRange(p + 100)
	require.NoError(t, err)
	assert.Equal(t, p, base)
	assert.GreaterOrEqual(t, size, n)
	attrs, err := d.PointerGetAttributes([]cuda.PointerAttr{cuda.PointerMemoryType, cuda.PointerDeviceOrdinal}, p)
	require.NoError(t, err)
	assert.Equal(t, []uint64{cuda.MemoryTypeDevice, 0}, attrs)
	ctxAttr, err := d.PointerGetAttribute(cuda.PointerContext, p)
	require.NoError(t, err)
	assert.Equal(t, uint64(ctx), ctxAttr)

	// Pinned and registered host memory, async copies and memsets.
	h, err := d.MemHostAlloc(n, cuda.HostAllocPortable)
	require.NoError(t, err)
	defer d.MemFreeHost(h)
	reg, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(reg)
	regp := uintptr(unsafe.Pointer(&reg[0]))
	require.NoError(t, d.MemHostRegister(regp, n, cuda.HostRegisterPortable))
	defer func() { assert.NoError(t, d.MemHostUnregister(regp)) }()
	q, err := d.MemAlloc(n)
	require.NoError(t, err)
	defer d.MemFree(q)
	s, err := d.StreamCreate(cuda.StreamNonBlocking)
	require.NoError(t, err)
	defer d.StreamDestroy(s)
	copy(reg, random(2, n))
	require.NoError(t, d.MemcpyHtoDAsync(q, regp, n, s))
	require.NoError(t, d.MemsetD8Async(q, 0xEE, 5, s))
	require.NoError(t, d.MemsetD32Async(q+8, 0x01020304, 2, s))
	require.NoError(t, d.MemcpyDtoDAsync(p, q, n, s))
	require.NoError(t, d.MemcpyDtoHAsync(h, p, n, s))
	require.NoError(t, d.StreamSynchronize(s))
	want := append([]byte(nil), reg...)
	copy(want, []byte{0xEE, 0xEE, 0xEE, 0xEE, 0xEE})
	copy(want[8:], []byte{4, 3, 2, 1, 4, 3, 2, 1})
	require.Equal(t, want, view(h, n))
	dp, err := d.MemHostGetDevicePointer(h)
	require.NoError(t, err)
	assert.NotZero(t, dp)
	require.NoError(t, d.MemcpyDtoD(q, p, n))
	require.NoError(t, d.CtxSynchronize())
}

func loadKernels(t *testing.T, d cuda.Driver) cuda.Module {
	img, err := kernels.Fatbin()
	if err != nil && os.Getenv("GCCL_REQUIRE_FATBIN") != "1" {
		t.Skipf("no fatbin: %v", err)
	}
	require.NoError(t, err)
	m, err := d.ModuleLoadData(img)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.ModuleUnload(m)) })
	return m
}

func fill(t *testing.T, d cuda.Driver, f cuda.Function, p uintptr, n int, seed uint32, s cuda.Stream) {
	var a cuda.Args
	a.Ptr(p).U64(uint64(n)).U32(seed)
	require.NoError(t, d.LaunchKernel(f, cuda.Dim3{X: 8, Y: 1, Z: 1}, cuda.Dim3{X: 256, Y: 1, Z: 1}, 0, s, &a))
}

func checkFill(t *testing.T, d cuda.Driver, p uintptr, n int, seed uint32) {
	got := make([]byte, 4*n)
	require.NoError(t, d.MemcpyDtoH(got, p))
	for i := 0; i < n; i++ {
		require.Equal(t, seed^uint32(uint64(i)*2654435761), binary.LittleEndian.Uint32(got[4*i:]), "element %d", i)
	}
}

func TestGPUKernelsEventsHostFuncs(t *testing.T) {
	d, _, _ := gpu(t, 1)
	m := loadKernels(t, d)
	stack := 0
	for _, name := range kernels.EntryPoints() {
		f, err := d.ModuleGetFunction(m, name)
		require.NoError(t, err, name)
		require.NoError(t, d.FuncLoad(f), name)
		n, err := d.FuncAttribute(cuda.FuncLocalSizeBytes, f)
		require.NoError(t, err, name)
		stack = max(stack, n)
	}
	limit, err := d.CtxLimit(cuda.LimitStackSize)
	require.NoError(t, err)
	t.Logf("largest kernel stack %d bytes a thread; context stack limit %d", stack, limit)
	require.NoError(t, d.CtxSetLimit(cuda.LimitStackSize, limit))
	fn, err := d.ModuleGetFunction(m, kernels.FillU32)
	require.NoError(t, err)
	const n = 100_003
	p, err := d.MemAlloc(4 * n)
	require.NoError(t, err)
	defer d.MemFree(p)
	s1, _ := d.StreamCreate(cuda.StreamNonBlocking)
	s2, _ := d.StreamCreate(cuda.StreamNonBlocking)
	defer d.StreamDestroy(s1)
	defer d.StreamDestroy(s2)
	e0, _ := d.EventCreate(cuda.EventDefault)
	e1, _ := d.EventCreate(cuda.EventDefault)
	defer d.EventDestroy(e0)
	defer d.EventDestroy(e1)
	var slow, sawSlow atomic.Bool
	require.NoError(t, d.EventRecord(e0, s1))
	require.NoError(t, d.LaunchHostFunc(s1, func() { time.Sleep(50 * time.Millisecond); slow.Store(true) }))
	fill(t, d, fn, p, n, 0xABCD, s1)
	require.NoError(t, d.EventRecord(e1, s1))
	require.NoError(t, d.StreamWaitEvent(s2, e1))
	require.NoError(t, d.LaunchHostFunc(s2, func() { sawSlow.Store(slow.Load()) }))
	require.NoError(t, d.StreamSynchronize(s2))
	assert.True(t, sawSlow.Load(), "s2 ran before the event it waited for")
	require.NoError(t, d.EventSynchronize(e1))
	done, err := d.EventQuery(e1)
	require.NoError(t, err)
	assert.True(t, done)
	ms, err := d.EventElapsedTime(e0, e1)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ms, float32(40))
	checkFill(t, d, p, n, 0xABCD)

	// Stream memory operations: s1 waits for a flag s2 writes.
	flag, _ := d.MemAlloc(16)
	defer d.MemFree(flag)
	require.NoError(t, d.MemsetD32Async(flag, 0, 4, s1))
	require.NoError(t, d.StreamSynchronize(s1))
	require.NoError(t, d.StreamWaitValue32(s1, flag, 1, cuda.WaitValueEQ))
	require.NoError(t, d.StreamWaitValue64(s1, flag+8, 9, cuda.WaitValueGEQ))
	fill(t, d, fn, p, n, 0x5555, s1)
	q, err := d.StreamQuery(s1)
	require.NoError(t, err)
	assert.False(t, q, "s1 must be blocked on the flag")
	require.NoError(t, d.StreamWriteValue32(s2, flag, 1, cuda.WriteValueDefault))
	require.NoError(t, d.StreamWriteValue64(s2, flag+8, 10, cuda.WriteValueDefault))
	require.NoError(t, d.StreamSynchronize(s1))
	checkFill(t, d, p, n, 0x5555)
}

func TestGPUGraphCapture(t *testing.T) {
	d, _, _ := gpu(t, 1)
	m := loadKernels(t, d)
	fn, err := d.ModuleGetFunction(m, kernels.FillU32)
	require.NoError(t, err)
	const n = 4099
	p, _ := d.MemAlloc(4 * n)
	defer d.MemFree(p)
	s, _ := d.StreamCreate(cuda.StreamNonBlocking)
	defer d.StreamDestroy(s)
	var hits atomic.Int32
	require.NoError(t, d.StreamBeginCapture(s, cuda.CaptureModeThreadLocal))
	st, err := d.StreamIsCapturing(s)
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureActive, st)
	info, err := d.StreamGetCaptureInfo(s)
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureActive, info.Status)
	assert.NotZero(t, info.ID)
	require.NoError(t, d.MemsetD32Async(p, 0, n, s))
	fill(t, d, fn, p, n, 0x77, s)
	require.NoError(t, d.LaunchHostFunc(s, func() { hits.Add(1) }))
	g, err := d.StreamEndCapture(s)
	require.NoError(t, err)
	destroyed := make(chan struct{})
	o, err := d.UserObjectCreate(func() { close(destroyed) })
	require.NoError(t, err)
	require.NoError(t, d.GraphRetainUserObject(g, o, 1, true))
	e, err := d.GraphInstantiate(g)
	require.NoError(t, err)
	require.NoError(t, d.GraphDestroy(g))
	for i := 0; i < 3; i++ {
		require.NoError(t, d.GraphLaunch(e, s))
	}
	require.NoError(t, d.StreamSynchronize(s))
	assert.Equal(t, int32(3), hits.Load())
	checkFill(t, d, p, n, 0x77)
	require.NoError(t, d.GraphExecDestroy(e))
	require.NoError(t, d.CtxSynchronize())
	select {
	case <-destroyed:
	case <-time.After(10 * time.Second):
		t.Fatal("user object destructor did not run after the graph and exec were destroyed")
	}
}

// TestGPUP2PAttributeSelf: on one GPU, cuDeviceGetP2PAttribute resolves
// (at 8000) and refuses a device paired with itself.
func TestGPUP2PAttributeSelf(t *testing.T) {
	d, dev, _ := gpu(t, 1)
	_, err := d.DeviceP2PAttribute(cuda.P2PAccessSupported, dev, dev)
	require.Error(t, err)
	assert.False(t, errors.Is(err, cuda.ErrorSymbolMissing), "%v", err)
	t.Logf("a device with itself: %v", err)
}

// TestGPUP2PAttribute: cuDeviceGetP2PAttribute resolves and answers
// within its documented ranges; access agrees with cuDeviceCanAccessPeer.
func TestGPUP2PAttribute(t *testing.T) {
	d, _, _ := gpu(t, 2)
	dev1, _ := d.DeviceGet(1)
	for _, attr := range []cuda.P2PAttr{cuda.P2PAccessSupported, cuda.P2PNativeAtomicSupported, cuda.P2PCUDAArrayAccessSupported} {
		v, err := d.DeviceP2PAttribute(attr, 0, dev1)
		require.NoError(t, err, "attribute %d", attr)
		assert.Contains(t, []int{0, 1}, v, "attribute %d", attr)
	}
	rank, err := d.DeviceP2PAttribute(cuda.P2PPerformanceRank, 0, dev1)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rank, 0)
	access, _ := d.DeviceP2PAttribute(cuda.P2PAccessSupported, 0, dev1)
	ok, err := d.DeviceCanAccessPeer(0, dev1)
	require.NoError(t, err)
	assert.Equal(t, ok, access == 1)
	_, err = d.DeviceP2PAttribute(cuda.P2PAccessSupported, 0, 0)
	assert.Error(t, err, "a device with itself")
}

func TestGPUPeerAccess(t *testing.T) {
	d, _, _ := gpu(t, 2)
	dev1, _ := d.DeviceGet(1)
	ok, err := d.DeviceCanAccessPeer(0, dev1)
	require.NoError(t, err)
	if !ok {
		t.Skip("GPUs 0 and 1 are not peers")
	}
	ctx1, err := d.PrimaryCtxRetain(dev1)
	require.NoError(t, err)
	defer d.PrimaryCtxRelease(dev1)
	require.NoError(t, d.CtxEnablePeerAccess(ctx1))
	require.NoError(t, d.CtxEnablePeerAccess(ctx1), "enabling twice is not an error")
	require.NoError(t, d.CtxSetCurrent(ctx1))
	remote, err := d.MemAlloc(1 << 16)
	require.NoError(t, err)
	defer d.MemFree(remote)
	src := random(3, 1<<16)
	require.NoError(t, d.MemcpyHtoD(remote, src))
	ctx0, _ := d.PrimaryCtxRetain(0)
	defer d.PrimaryCtxRelease(0)
	require.NoError(t, d.CtxSetCurrent(ctx0))
	local, _ := d.MemAlloc(1 << 16)
	defer d.MemFree(local)
	require.NoError(t, d.MemcpyDtoD(local, remote, 1<<16))
	got := make([]byte, 1<<16)
	require.NoError(t, d.MemcpyDtoH(got, local))
	assert.Equal(t, src, got)
}

// TestGPUIPCAndVMM shares memory with a child process twice: a cuIpc
// handle and a cuMem POSIX FD. The child hashes what it reads.
func TestGPUIPCAndVMM(t *testing.T) {
	d, dev, _ := gpu(t, 1)
	const n = 1 << 20
	src := random(4, n)
	want := sha256.Sum256(src)

	p, _ := d.MemAlloc(n)
	defer d.MemFree(p)
	require.NoError(t, d.MemcpyHtoD(p, src))
	ih, err := d.IpcGetMemHandle(p)
	require.NoError(t, err)
	out := child(t, nil, "GCCL_CHILD_IPC="+hex.EncodeToString(ih[:]))
	assert.Equal(t, hex.EncodeToString(want[:]), out, "IPC child read other bytes")

	g, err := d.MemGetAllocationGranularity(dev, cuda.HandlePosixFD, false)
	require.NoError(t, err)
	size := (n + g - 1) / g * g
	mh, err := d.MemCreate(size, dev, cuda.HandlePosixFD)
	require.NoError(t, err)
	va, err := d.MemAddressReserve(size, 0)
	require.NoError(t, err)
	require.NoError(t, d.MemMap(va, size, 0, mh))
	require.NoError(t, d.MemSetAccess(va, size, dev, cuda.AccessReadWrite))
	require.NoError(t, d.MemcpyHtoD(va, src))
	rh, err := d.MemRetainAllocationHandle(va + 10)
	require.NoError(t, err)
	assert.Equal(t, mh, rh)
	require.NoError(t, d.MemRelease(rh))
	fd, err := d.MemExportToShareableHandle(mh)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), "cumem-fd")
	defer f.Close()
	out = child(t, []*os.File{f}, fmt.Sprintf("GCCL_CHILD_VMM=%d", size))
	assert.Equal(t, hex.EncodeToString(want[:]), out, "VMM child read other bytes")
	require.NoError(t, d.MemUnmap(va, size))
	require.NoError(t, d.MemRelease(mh))
	require.NoError(t, d.MemAddressFree(va, size))
}

func child(t *testing.T, files []*os.File, env string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUChild$")
	cmd.Env = append(os.Environ(), env)
	cmd.ExtraFiles = files
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Split(string(out), "\n") {
		if h, ok := strings.CutPrefix(line, "sha256="); ok {
			return h
		}
	}
	t.Fatalf("child printed no hash: %s", out)
	return ""
}

// TestGPUChild is the child half of TestGPUIPCAndVMM; it does nothing
// unless started by it.
func TestGPUChild(t *testing.T) {
	ipc, vmm := os.Getenv("GCCL_CHILD_IPC"), os.Getenv("GCCL_CHILD_VMM")
	if ipc == "" && vmm == "" {
		t.Skip("only run as TestGPUIPCAndVMM's child")
	}
	d, dev, _ := gpu(t, 1)
	const n = 1 << 20
	buf := make([]byte, n)
	if ipc != "" {
		raw, err := hex.DecodeString(ipc)
		require.NoError(t, err)
		var h cuda.IpcMemHandle
		copy(h[:], raw)
		p, err := d.IpcOpenMemHandle(h, cuda.IpcLazyEnablePeerAccess)
		require.NoError(t, err)
		require.NoError(t, d.MemcpyDtoH(buf, p))
		require.NoError(t, d.IpcCloseMemHandle(p))
	} else {
		var size int
		fmt.Sscan(vmm, &size)
		h, err := d.MemImportFromShareableHandle(3)
		require.NoError(t, err)
		va, err := d.MemAddressReserve(size, 0)
		require.NoError(t, err)
		require.NoError(t, d.MemMap(va, size, 0, h))
		require.NoError(t, d.MemSetAccess(va, size, dev, cuda.AccessReadWrite))
		require.NoError(t, d.MemcpyDtoH(buf, va))
		require.NoError(t, d.MemUnmap(va, size))
		require.NoError(t, d.MemRelease(h))
		require.NoError(t, d.MemAddressFree(va, size))
	}
	sum := sha256.Sum256(buf)
	fmt.Printf("sha256=%s\n", hex.EncodeToString(sum[:]))
}
