package gpu

import (
	"testing"
	"time"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/stretchr/testify/require"
)

// openGPU opens GPU 0 of drv (a cudafake) as the device a test's rank runs
// on.
func openGPU(tb testing.TB, drv cuda.Driver) *device.CUDADevice {
	tb.Helper()
	d, err := devlink.OpenGPU(drv, 0, 10*time.Second)
	require.NoError(tb, err)
	return d.(*device.CUDADevice)
}
