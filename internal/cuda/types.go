package cuda

// Handles. Device pointers are plain uintptr values (CUdeviceptr); the
// opaque driver handles are uintptr too, so callers that use any other
// CUDA binding interoperate by converting their handles.
type (
	Device     int32   // CUdevice: an ordinal-like driver handle
	Context    uintptr // CUcontext
	Stream     uintptr // CUstream; 0 is the legacy default stream
	Event      uintptr // CUevent
	Module     uintptr // CUmodule
	Function   uintptr // CUfunction
	Graph      uintptr // CUgraph
	GraphExec  uintptr // CUgraphExec
	UserObject uintptr // CUuserObject
	MemHandle  uint64  // CUmemGenericAllocationHandle
)

// IpcMemHandle is a CUipcMemHandle: 64 opaque bytes another process opens.
type IpcMemHandle [64]byte

// UUID is a device's 16-byte CUuuid.
type UUID [16]byte

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// FuncAttr is a CUfunction_attribute.
type FuncAttr int32

// The function attributes gccl queries.
const (
	// FuncLocalSizeBytes is the local memory (stack) a thread of the
	// function needs.
	FuncLocalSizeBytes FuncAttr = 3
)

// Limit is a CUlimit.
type Limit int32

// The context limits gccl reads and sets.
const (
	// LimitStackSize is the stack (local memory) of each GPU thread. The
	// driver reserves local memory for it; a launch needing more resizes
	// that reservation, which waits for the context's running kernels.
	LimitStackSize Limit = 0
)

// DeviceAttr is a CUdevice_attribute.
type DeviceAttr int32

// The device attributes gccl queries (values of CUdevice_attribute).
const (
	AttrMaxThreadsPerBlock           DeviceAttr = 1
	AttrMultiprocessorCount          DeviceAttr = 16
	AttrPCIBusID                     DeviceAttr = 33
	AttrPCIDeviceID                  DeviceAttr = 34
	AttrL2CacheSize                  DeviceAttr = 38
	AttrUnifiedAddressing            DeviceAttr = 41
	AttrPCIDomainID                  DeviceAttr = 50
	AttrComputeCapabilityMajor       DeviceAttr = 75
	AttrComputeCapabilityMinor       DeviceAttr = 76
	AttrCanUseHostPointerForRegMem   DeviceAttr = 91
	AttrCooperativeLaunch            DeviceAttr = 95
	AttrMaxSharedMemoryPerBlockOptin DeviceAttr = 97
	AttrVirtualMemoryManagement      DeviceAttr = 102
	AttrHandleTypePosixFD            DeviceAttr = 103
	AttrGPUDirectRDMASupported       DeviceAttr = 116
)

// P2PAttr is a CUdevice_P2PAttribute: what cuDeviceGetP2PAttribute says
// about the link from one device to another.
type P2PAttr int32

// The P2P attributes (values of CUdevice_P2PAttribute in cuda.h).
const (
	// P2PPerformanceRank is the link's relative performance: 0 is the
	// best the system has, larger is slower.
	P2PPerformanceRank P2PAttr = 1
	// P2PAccessSupported is 1 when the source can map the destination's
	// memory (peer access).
	P2PAccessSupported P2PAttr = 2
	// P2PNativeAtomicSupported is 1 when the source's atomic operations
	// on the destination's memory run natively over the link.
	P2PNativeAtomicSupported P2PAttr = 3
	// P2PCUDAArrayAccessSupported is 1 when CUDA arrays are accessible
	// over the link (CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED,
	// which has the value of the deprecated ACCESS_ACCESS_SUPPORTED).
	P2PCUDAArrayAccessSupported P2PAttr = 4
)

// Stream, event and memory flags.
const (
	StreamNonBlocking = 0x1 // CU_STREAM_NON_BLOCKING

	EventDefault       = 0x0 // CU_EVENT_DEFAULT
	EventBlockingSync  = 0x1 // CU_EVENT_BLOCKING_SYNC
	EventDisableTiming = 0x2 // CU_EVENT_DISABLE_TIMING
	EventInterprocess  = 0x4 // CU_EVENT_INTERPROCESS

	HostAllocPortable  = 0x1 // CU_MEMHOSTALLOC_PORTABLE
	HostAllocDeviceMap = 0x2 // CU_MEMHOSTALLOC_DEVICEMAP

	HostRegisterPortable  = 0x1 // CU_MEMHOSTREGISTER_PORTABLE
	HostRegisterDeviceMap = 0x2 // CU_MEMHOSTREGISTER_DEVICEMAP

	IpcLazyEnablePeerAccess = 0x1 // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
)

// HandleType is a CUmemAllocationHandleType.
type HandleType int32

// Shareable handle types. gccl uses POSIX file descriptors.
const (
	HandleNone    HandleType = 0
	HandlePosixFD HandleType = 1
)

// Access is a CUmemAccess_flags value.
type Access int32

// Access rights for MemSetAccess.
const (
	AccessNone      Access = 0
	AccessRead      Access = 1
	AccessReadWrite Access = 3
)

// CaptureMode is a CUstreamCaptureMode.
type CaptureMode int32

// Capture modes.
const (
	CaptureModeGlobal      CaptureMode = 0
	CaptureModeThreadLocal CaptureMode = 1
	CaptureModeRelaxed     CaptureMode = 2
)

// CaptureStatus is a CUstreamCaptureStatus.
type CaptureStatus int32

// Capture states of a stream.
const (
	CaptureNone        CaptureStatus = 0
	CaptureActive      CaptureStatus = 1
	CaptureInvalidated CaptureStatus = 2
)

// CaptureInfo is what StreamGetCaptureInfo reports.
type CaptureInfo struct {
	Status CaptureStatus
	ID     uint64 // unique per capture sequence
	Graph  Graph  // the graph being captured into (valid while Status is active)
}

// Stream memory operation flags (CUstreamWaitValue_flags, CUstreamWriteValue_flags).
const (
	WaitValueGEQ   = 0x0
	WaitValueEQ    = 0x1
	WaitValueAnd   = 0x2
	WaitValueNor   = 0x3
	WaitValueFlush = 1 << 30

	WriteValueDefault         = 0x0
	WriteValueNoMemoryBarrier = 0x1
)

// PointerAttr is a CUpointer_attribute.
type PointerAttr int32

// Pointer attributes gccl queries; each comes back as a uint64.
const (
	PointerContext       PointerAttr = 1
	PointerMemoryType    PointerAttr = 2 // MemoryTypeHost, MemoryTypeDevice...
	PointerDevicePointer PointerAttr = 3
	PointerHostPointer   PointerAttr = 4
	PointerBufferID      PointerAttr = 7
	PointerIsManaged     PointerAttr = 8
	PointerDeviceOrdinal PointerAttr = 9
	PointerRangeStart    PointerAttr = 11
	PointerRangeSize     PointerAttr = 12
	PointerMapped        PointerAttr = 13
	PointerAllowedHandle PointerAttr = 14
)

// Memory types reported by PointerMemoryType (CUmemorytype).
const (
	MemoryTypeHost    = 1
	MemoryTypeDevice  = 2
	MemoryTypeArray   = 3
	MemoryTypeUnified = 4
)

// fitsSlot reports whether the attribute's value fits the 8-byte slot the
// shim gives each attribute (CU_POINTER_ATTRIBUTE_P2P_TOKENS, a struct,
// does not).
func (a PointerAttr) fitsSlot() bool { return a >= 1 && a <= 20 && a != 5 }
