package cudafake

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake/memory"
)

// Granularity is the fake's VMM allocation granularity.
const Granularity = memory.Granularity

// Live is the number of allocations made through any Fake of this process
// and not yet freed: device memory from cuMemAlloc or cuMemCreate, memory
// mapped from an IPC handle or an imported FD, and pinned host memory.
// internal/leakcheck fails a test binary that ends with more than it
// started with.
func Live() int { return memory.Live() }

// Config shapes a fake machine; the zero value is one GPU of 1 GiB.
type Config struct {
	Devices  int  // number of GPUs (default 1)
	MemBytes int  // memory per GPU (default 1 GiB)
	NoPeer   bool // DeviceCanAccessPeer reports false
	// P2P is what DeviceP2PAttribute answers for the link from device
	// [0] to device [1] (not implied the other way); a pair not listed
	// has no link (every attribute 0).
	P2P         map[[2]int]P2PAttrs
	WaitTimeout time.Duration // bound on StreamWaitValue and event waits (default 10s)
	Version     int           // driver version reported (default 13000)
	// VABase is where the fake's device addresses start (default 1<<60).
	// Fakes standing for the ranks of one process, which share one
	// unified address space on a real machine, get distinct bases so
	// that process-wide tables keyed by address (bufreg.MemAlloc's) do
	// not see two allocations at one address.
	VABase uintptr
}

// Kernel is a Go stand-in for a device kernel, run in stream order.
// It reads and writes fake device memory through Fake.Bytes.
type Kernel func(f *Fake, grid, block cuda.Dim3, args *cuda.Args) error

// Fake is an in-process cuda.Driver on host memory. Device memory lives in
// shared-memory files, so IPC handles and exported POSIX FDs work between
// processes too; device addresses are synthetic (never host pointers), so
// code that dereferences a device pointer on the host fails loudly.
//
// Limits: the current context is process-wide, not per OS thread; a graph
// captured over several streams replays their work in one sequence.
type Fake struct {
	*memory.Space // the memory calls: allocations, VMM, IPC, host memory, pointer attributes

	cfg   Config
	nextH atomic.Uint64 // the last handle numbered, of any kind

	mu            sync.Mutex
	current       int // device of the current context, -1 none
	retained      []int
	peers         map[[2]int]bool
	kernels       map[string]Kernel
	modules       map[cuda.Module]bool
	funcs         map[cuda.Function]string
	fnByName      map[string]cuda.Function
	loaded        map[string]bool // functions FuncLoad loaded
	localBytes    map[string]int  // FuncLocalSizeBytes by kernel (SetLocalBytes)
	stackLimit    int             // LimitStackSize
	streams       map[cuda.Stream]*stream
	events        map[cuda.Event]*event
	graphs        map[cuda.Graph]*graph
	execs         map[cuda.GraphExec]*graph
	objects       map[cuda.UserObject]*userObject
	captureID     uint64
	captureMode   cuda.CaptureMode
	modeExchanges int
	profiling     bool // between ProfilerStart and ProfilerStop
	profiled      int  // ranges ProfilerStop closed
}

var _ cuda.Driver = (*Fake)(nil)

// New makes a fake machine.
func New(cfg Config) *Fake {
	if cfg.Devices <= 0 {
		cfg.Devices = 1
	}
	if cfg.MemBytes <= 0 {
		cfg.MemBytes = 1 << 30
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = 10 * time.Second
	}
	if cfg.Version == 0 {
		cfg.Version = 13000
	}
	if cfg.VABase == 0 {
		cfg.VABase = 1 << 60
	}
	f := &Fake{cfg: cfg, current: -1, retained: make([]int, cfg.Devices),
		peers: map[[2]int]bool{}, kernels: map[string]Kernel{}, modules: map[cuda.Module]bool{}, funcs: map[cuda.Function]string{},
		fnByName: map[string]cuda.Function{}, loaded: map[string]bool{}, localBytes: map[string]int{}, stackLimit: 1024, streams: map[cuda.Stream]*stream{}, events: map[cuda.Event]*event{},
		graphs: map[cuda.Graph]*graph{}, execs: map[cuda.GraphExec]*graph{}, objects: map[cuda.UserObject]*userObject{}}
	f.Space = memory.New(memory.Config{Devices: cfg.Devices, MemBytes: cfg.MemBytes, VABase: cfg.VABase,
		Current: f.currentDevice, Handle: f.handle})
	f.streams[0] = newStream(f, 0)
	return f
}

// RegisterKernel makes name loadable by ModuleGetFunction from any module.
func (f *Fake) RegisterKernel(name string, k Kernel) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kernels[name] = k
}

var fail = memory.Fail

// handle numbers a new handle: streams, events, modules, functions,
// graphs, executables, user objects and memory handles share one sequence.
func (f *Fake) handle() uint64 { return f.nextH.Add(1) }

func (f *Fake) Version() (int, error)     { return f.cfg.Version, nil }
func (f *Fake) DeviceCount() (int, error) { return f.cfg.Devices, nil }

func (f *Fake) DeviceGet(ordinal int) (cuda.Device, error) {
	if ordinal < 0 || ordinal >= f.cfg.Devices {
		return 0, fail("cuDeviceGet", cuda.ErrorInvalidDevice)
	}
	return cuda.Device(ordinal), nil
}

func (f *Fake) checkDev(fn string, d cuda.Device) error {
	return memory.CheckDevice(fn, d, f.cfg.Devices)
}

func (f *Fake) DeviceAttribute(attr cuda.DeviceAttr, dev cuda.Device) (int, error) {
	if err := f.checkDev("cuDeviceGetAttribute", dev); err != nil {
		return 0, err
	}
	switch attr {
	case cuda.AttrMultiprocessorCount:
		return 132, nil
	case cuda.AttrComputeCapabilityMajor:
		return 9, nil
	case cuda.AttrComputeCapabilityMinor:
		return 0, nil
	case cuda.AttrMaxThreadsPerBlock:
		return 1024, nil
	case cuda.AttrL2CacheSize:
		return 50 << 20, nil
	case cuda.AttrPCIBusID:
		return 0x10 + int(dev), nil
	case cuda.AttrUnifiedAddressing, cuda.AttrVirtualMemoryManagement, cuda.AttrHandleTypePosixFD,
		cuda.AttrCooperativeLaunch, cuda.AttrCanUseHostPointerForRegMem:
		return 1, nil
	}
	return 0, nil
}

func (f *Fake) DeviceName(dev cuda.Device) (string, error) {
	if err := f.checkDev("cuDeviceGetName", dev); err != nil {
		return "", err
	}
	return "cudafake GPU", nil
}

func (f *Fake) DeviceUUID(dev cuda.Device) (cuda.UUID, error) {
	var u cuda.UUID
	if err := f.checkDev("cuDeviceGetUuid", dev); err != nil {
		return u, err
	}
	copy(u[:], "cudafake-gpu")
	u[15] = byte(dev)
	return u, nil
}

func (f *Fake) DeviceCanAccessPeer(dev, peer cuda.Device) (bool, error) {
	if err := f.checkDev("cuDeviceCanAccessPeer", dev); err != nil {
		return false, err
	}
	if err := f.checkDev("cuDeviceCanAccessPeer", peer); err != nil {
		return false, err
	}
	return !f.cfg.NoPeer && dev != peer, nil
}

// P2PAttrs are the cuDeviceGetP2PAttribute answers for one ordered pair
// of the fake's devices.
type P2PAttrs struct {
	PerformanceRank, Access, NativeAtomic, ArrayAccess int
}

// The answers of the links of common machines: NVLink (NVSwitch
// systems: peer access with native atomics and CUDA arrays) and PCIe
// (peer access, no native atomics over the bus).
var (
	NVLinkAttrs = P2PAttrs{PerformanceRank: 0, Access: 1, NativeAtomic: 1, ArrayAccess: 1}
	PCIeAttrs   = P2PAttrs{PerformanceRank: 0, Access: 1, NativeAtomic: 0, ArrayAccess: 0}
)

// DeviceP2PAttribute answers from Config.P2P; like the driver it refuses
// a device paired with itself.
func (f *Fake) DeviceP2PAttribute(attr cuda.P2PAttr, src, dst cuda.Device) (int, error) {
	for _, d := range []cuda.Device{src, dst} {
		if err := f.checkDev("cuDeviceGetP2PAttribute", d); err != nil {
			return 0, err
		}
	}
	if src == dst {
		return 0, fail("cuDeviceGetP2PAttribute", cuda.ErrorInvalidDevice)
	}
	a := f.cfg.P2P[[2]int{int(src), int(dst)}]
	switch attr {
	case cuda.P2PPerformanceRank:
		return a.PerformanceRank, nil
	case cuda.P2PAccessSupported:
		return a.Access, nil
	case cuda.P2PNativeAtomicSupported:
		return a.NativeAtomic, nil
	case cuda.P2PCUDAArrayAccessSupported:
		return a.ArrayAccess, nil
	}
	return 0, fail("cuDeviceGetP2PAttribute", cuda.ErrorInvalidValue)
}

// Contexts are the device ordinal + 1 (0 is "no context").
func (f *Fake) PrimaryCtxRetain(dev cuda.Device) (cuda.Context, error) {
	if err := f.checkDev("cuDevicePrimaryCtxRetain", dev); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retained[dev]++
	return cuda.Context(dev + 1), nil
}

func (f *Fake) PrimaryCtxRelease(dev cuda.Device) error {
	if err := f.checkDev("cuDevicePrimaryCtxRelease", dev); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retained[dev] == 0 {
		return fail("cuDevicePrimaryCtxRelease", cuda.ErrorInvalidContext)
	}
	f.retained[dev]--
	return nil
}

func (f *Fake) ctxDev(fn string, c cuda.Context) (int, error) {
	d := int(c) - 1
	if d < 0 || d >= f.cfg.Devices || f.retained[d] == 0 {
		return 0, fail(fn, cuda.ErrorInvalidContext)
	}
	return d, nil
}

func (f *Fake) CtxSetCurrent(c cuda.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c == 0 {
		f.current = -1
		return nil
	}
	d, err := f.ctxDev("cuCtxSetCurrent", c)
	if err == nil {
		f.current = d
	}
	return err
}

func (f *Fake) CtxGetCurrent() (cuda.Context, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cuda.Context(f.current + 1), nil
}

// currentDevice is the current device (for the memory calls).
func (f *Fake) currentDevice(fn string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.currentDev(fn)
}

// currentDev is the current device; callers hold f.mu.
func (f *Fake) currentDev(fn string) (int, error) {
	if f.current < 0 {
		return 0, fail(fn, cuda.ErrorInvalidContext)
	}
	return f.current, nil
}

// ProfilerStart opens a profiler range (a second start is a no-op, as
// with the driver).
func (f *Fake) ProfilerStart() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.profiling = true
	return nil
}

// ProfilerStop closes the open profiler range, if any.
func (f *Fake) ProfilerStop() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.profiling {
		f.profiling, f.profiled = false, f.profiled+1
	}
	return nil
}

// ProfilerRanges reports how many profiler ranges were closed and whether
// one is open.
func (f *Fake) ProfilerRanges() (closed int, open bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.profiled, f.profiling
}

func (f *Fake) CtxSynchronize() error {
	f.mu.Lock()
	ss := make([]*stream, 0, len(f.streams))
	for _, s := range f.streams {
		ss = append(ss, s)
	}
	f.mu.Unlock()
	for _, s := range ss {
		if err := s.sync(); err != nil {
			return err
		}
	}
	return nil
}

func (f *Fake) CtxEnablePeerAccess(peer cuda.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	me, err := f.currentDev("cuCtxEnablePeerAccess")
	if err != nil {
		return err
	}
	p, err := f.ctxDev("cuCtxEnablePeerAccess", peer)
	if err != nil {
		return err
	}
	if f.cfg.NoPeer || p == me {
		return fail("cuCtxEnablePeerAccess", cuda.ErrorInvalidDevice)
	}
	f.peers[[2]int{me, p}] = true
	return nil
}

// PeerEnabled reports whether device a enabled access to device b (for tests).
func (f *Fake) PeerEnabled(a, b int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peers[[2]int{a, b}]
}
