// Package devlink gives gccl's own packages what package device keeps out
// of its public API: the CUDA driver a GPU device calls, and opening a GPU
// through a given driver (a cudafake in tests). Package device installs the
// accessors from an init function; this package cannot name device's types
// (device imports it), so a device travels as a value of type any: a
// device.Device, and OpenGPU's result is a *device.CUDADevice.
package devlink

import (
	"time"

	"github.com/gccl/gccl/internal/cuda"
)

var (
	openGPU  func(drv cuda.Driver, ordinal int, timeout time.Duration) (any, error)
	driverOf func(d any) (cuda.Driver, bool)
)

// Install sets the accessors; package device calls it once, at init.
func Install(open func(drv cuda.Driver, ordinal int, timeout time.Duration) (any, error), driver func(d any) (cuda.Driver, bool)) {
	openGPU, driverOf = open, driver
}

// OpenGPU opens GPU ordinal through drv as a *device.CUDADevice, whose
// Synchronize gives up after timeout (0: GCCL_TIMEOUT).
func OpenGPU(drv cuda.Driver, ordinal int, timeout time.Duration) (any, error) {
	return openGPU(drv, ordinal, timeout)
}

// Driver returns the driver that d (a device.Device) calls; ok is false
// when d is not a GPU.
func Driver(d any) (drv cuda.Driver, ok bool) { return driverOf(d) }
