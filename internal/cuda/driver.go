package cuda

// Driver is the CUDA driver API subset gccl uses. Load returns the real
// driver (libcuda.so.1); cudafake.New returns an in-process fake with the
// same behaviour on host memory, for tests on machines with no GPU.
//
// Every method returns a *gccl.Error with code gccl.UnhandledCudaError
// when the driver fails (errors.Is(err, cuda.ErrorOutOfMemory) etc. match
// the CUresult), and gccl.InvalidArgument for arguments refused before the
// driver is called. Methods that take a device context act on the context
// current on the calling OS thread: callers pin their goroutine with
// runtime.LockOSThread and call CtxSetCurrent, as with the C API.
type Driver interface {
	// Version is the driver's CUDA version, 1000*major + 10*minor.
	Version() (int, error)

	DeviceCount() (int, error)
	DeviceGet(ordinal int) (Device, error)
	DeviceAttribute(attr DeviceAttr, dev Device) (int, error)
	DeviceName(dev Device) (string, error)
	DeviceUUID(dev Device) (UUID, error)
	DeviceCanAccessPeer(dev, peer Device) (bool, error)
	// DeviceP2PAttribute is cuDeviceGetP2PAttribute: attr of the link
	// from src to dst (two distinct devices).
	DeviceP2PAttribute(attr P2PAttr, src, dst Device) (int, error)

	PrimaryCtxRetain(dev Device) (Context, error)
	PrimaryCtxRelease(dev Device) error
	CtxSetCurrent(ctx Context) error
	CtxGetCurrent() (Context, error)
	CtxSynchronize() error
	// ProfilerStart and ProfilerStop (cuProfilerStart, cuProfilerStop)
	// bracket a range of the current context's work for a profiler attached
	// to the process (Nsight Compute's range replay, Nsight Systems'
	// capture range); with none attached they do nothing.
	ProfilerStart() error
	ProfilerStop() error
	// CtxEnablePeerAccess maps the peer context's memory into the current
	// context; enabling it twice is not an error.
	CtxEnablePeerAccess(peer Context) error

	MemGetInfo() (free, total int, err error)
	MemAlloc(size int) (uintptr, error)
	MemFree(p uintptr) error
	MemGetAddressRange(p uintptr) (base uintptr, size int, err error)
	MemHostAlloc(size int, flags uint32) (uintptr, error)
	MemFreeHost(p uintptr) error
	MemHostRegister(p uintptr, size int, flags uint32) error
	MemHostUnregister(p uintptr) error
	MemHostGetDevicePointer(p uintptr) (uintptr, error)

	MemsetD8Async(p uintptr, v uint8, n int, s Stream) error
	MemsetD32Async(p uintptr, v uint32, n int, s Stream) error
	// The synchronous copies return when the bytes are at the destination
	// (the driver's may return earlier; gccl waits for the legacy stream).
	MemcpyHtoD(dst uintptr, src []byte) error
	MemcpyDtoH(dst []byte, src uintptr) error
	MemcpyDtoD(dst, src uintptr, n int) error
	// The async host copies take host addresses (pinned memory from
	// MemHostAlloc or MemHostRegister), never Go memory: the copy outlives
	// the call.
	MemcpyHtoDAsync(dst, src uintptr, n int, s Stream) error
	MemcpyDtoHAsync(dst, src uintptr, n int, s Stream) error
	MemcpyDtoDAsync(dst, src uintptr, n int, s Stream) error

	StreamCreate(flags uint32) (Stream, error)
	StreamDestroy(s Stream) error
	StreamSynchronize(s Stream) error
	// StreamQuery reports whether all work on s is done (CUDA_ERROR_NOT_READY is not an error).
	StreamQuery(s Stream) (bool, error)
	StreamWaitEvent(s Stream, e Event) error

	EventCreate(flags uint32) (Event, error)
	EventDestroy(e Event) error
	EventRecord(e Event, s Stream) error
	EventSynchronize(e Event) error
	EventQuery(e Event) (bool, error)
	EventElapsedTime(start, end Event) (ms float32, err error)

	ModuleLoadData(image []byte) (Module, error)
	ModuleUnload(m Module) error
	ModuleGetFunction(m Module, name string) (Function, error)
	// FuncLoad finishes loading f into the current context. Under lazy
	// loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) a
	// function from ModuleGetFunction may be only partly loaded, and its
	// first launch then loads it, which can wait for the kernels running
	// in the context. A driver older than 12.4 (no cuFuncLoad) loads it in
	// ModuleGetFunction, and FuncLoad does nothing.
	FuncLoad(f Function) error
	FuncAttribute(attr FuncAttr, f Function) (int, error)
	// CtxLimit and CtxSetLimit read and set a limit of the current context.
	CtxLimit(l Limit) (int, error)
	CtxSetLimit(l Limit, v int) error
	LaunchKernel(f Function, grid, block Dim3, sharedMem int, s Stream, args *Args) error

	IpcGetMemHandle(p uintptr) (IpcMemHandle, error)
	IpcOpenMemHandle(h IpcMemHandle, flags uint32) (uintptr, error)
	IpcCloseMemHandle(p uintptr) error

	// VMM: physical allocations on a device, shareable as POSIX FDs.
	MemCreate(size int, dev Device, handles HandleType) (MemHandle, error)
	MemRelease(h MemHandle) error
	MemAddressReserve(size, align int) (uintptr, error)
	MemAddressFree(p uintptr, size int) error
	MemMap(p uintptr, size, offset int, h MemHandle) error
	MemUnmap(p uintptr, size int) error
	MemSetAccess(p uintptr, size int, dev Device, access Access) error
	MemGetAllocationGranularity(dev Device, handles HandleType, recommended bool) (int, error)
	// MemExportToShareableHandle returns a new file descriptor the caller owns.
	MemExportToShareableHandle(h MemHandle) (fd int, err error)
	// MemImportFromShareableHandle does not take ownership of fd.
	MemImportFromShareableHandle(fd int) (MemHandle, error)
	MemRetainAllocationHandle(p uintptr) (MemHandle, error)

	StreamBeginCapture(s Stream, mode CaptureMode) error
	// ThreadExchangeStreamCaptureMode sets the calling thread's capture
	// interaction mode and returns the previous one.
	ThreadExchangeStreamCaptureMode(mode CaptureMode) (CaptureMode, error)
	StreamEndCapture(s Stream) (Graph, error)
	StreamIsCapturing(s Stream) (CaptureStatus, error)
	StreamGetCaptureInfo(s Stream) (CaptureInfo, error)
	GraphInstantiate(g Graph) (GraphExec, error)
	GraphLaunch(e GraphExec, s Stream) error
	GraphDestroy(g Graph) error
	GraphExecDestroy(e GraphExec) error
	// UserObjectCreate makes a user object with one reference whose
	// destructor runs fn (on a driver thread; fn must not call the driver).
	UserObjectCreate(fn func()) (UserObject, error)
	UserObjectRelease(o UserObject, count int) error
	// GraphRetainUserObject gives g count references to o; with move the
	// caller's references are moved instead of added.
	GraphRetainUserObject(g Graph, o UserObject, count int, move bool) error

	// LaunchHostFunc runs fn on a driver thread when s reaches it. fn must
	// not call the driver and must not block for long.
	LaunchHostFunc(s Stream, fn func()) error

	StreamWriteValue32(s Stream, addr uintptr, v uint32, flags uint32) error
	StreamWriteValue64(s Stream, addr uintptr, v uint64, flags uint32) error
	StreamWaitValue32(s Stream, addr uintptr, v uint32, flags uint32) error
	StreamWaitValue64(s Stream, addr uintptr, v uint64, flags uint32) error

	PointerGetAttribute(attr PointerAttr, p uintptr) (uint64, error)
	PointerGetAttributes(attrs []PointerAttr, p uintptr) ([]uint64, error)
}
