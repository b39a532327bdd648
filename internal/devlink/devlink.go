// Package devlink gives gccl's own packages what package device keeps out
// of its public API: the CUDA driver a GPU device calls, and opening a GPU
// through a given driver (a cudafake in tests). Package device installs the
// accessors from an init function; this package cannot name device's types
// (device imports it), so a device travels as a value of type any: a
// device.Device, and OpenGPU's result is a *device.CUDADevice.
package devlink

import (
	"sync"
	"time"

	"github.com/gccl/gccl/internal/cuda"
)

var loader struct {
	sync.Mutex
	load func() (cuda.Driver, error)
}

// Load returns the driver behind device.Open(device.CUDA, n): cuda.Load's,
// or the one a test set with SetLoader.
func Load() (cuda.Driver, error) {
	loader.Lock()
	load := loader.load
	loader.Unlock()
	if load != nil {
		return load()
	}
	return cuda.Load()
}

// SetLoader makes Load call load (a test puts a cudafake behind
// device.Open and so behind every communicator it creates) until restore
// is called. Not for tests that run in parallel with others opening GPUs.
func SetLoader(load func() (cuda.Driver, error)) (restore func()) {
	loader.Lock()
	prev := loader.load
	loader.load = load
	loader.Unlock()
	return func() {
		loader.Lock()
		loader.load = prev
		loader.Unlock()
	}
}

var (
	openGPU  func(drv cuda.Driver, ordinal int, timeout time.Duration) (any, error)
	driverOf func(d any) (cuda.Driver, bool)
	forget   func(d any, base uintptr)
)

// Install sets the accessors; package device calls it once, at init.
func Install(open func(drv cuda.Driver, ordinal int, timeout time.Duration) (any, error), driver func(d any) (cuda.Driver, bool),
	forgetRange func(d any, base uintptr)) {
	openGPU, driverOf, forget = open, driver, forgetRange
}

// Forget tells GPU device d that the allocation at base is about to be
// freed behind its back (bufreg.MemFree), so that the pointer check
// (device.CheckRange) stops accepting it. A no-op on other devices.
func Forget(d any, base uintptr) { forget(d, base) }

// OpenGPU opens GPU ordinal through drv as a *device.CUDADevice, whose
// Synchronize gives up after timeout (0: GCCL_TIMEOUT).
func OpenGPU(drv cuda.Driver, ordinal int, timeout time.Duration) (any, error) {
	return openGPU(drv, ordinal, timeout)
}

// Driver returns the driver that d (a device.Device) calls; ok is false
// when d is not a GPU.
func Driver(d any) (drv cuda.Driver, ok bool) { return driverOf(d) }
