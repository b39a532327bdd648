package regcache

import (
	"testing"
	"time"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// hostComm is the registration cache of a one-rank communicator on a host
// device (no network: registrations are local), closed after the test.
func hostComm(t *testing.T) *Cache {
	d, err := device.NewHost(0, time.Second)
	require.NoError(t, err)
	return newCache(t, Owner{Device: d, NRanks: 1})
}

// newCache is New(o), closed after the test.
func newCache(t *testing.T, o Owner) *Cache {
	c := New(o)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// gpuComm is the cache of a one-rank communicator on GPU ordinal of drv.
func gpuComm(t *testing.T, drv cuda.Driver, ordinal int) *Cache {
	return gpuRank(t, drv, ordinal, Owner{NRanks: 1})
}

// gpuRank is the cache of rank o on GPU ordinal of drv, opened for the
// test (the cache is closed before the device).
func gpuRank(t *testing.T, drv cuda.Driver, ordinal int, o Owner) *Cache {
	d, err := openGPU(drv, ordinal, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	o.Device = d
	return newCache(t, o)
}

func fakeComm(t *testing.T) (*Cache, *cudafake.Fake) {
	f := cudafake.New(cudafake.Config{Devices: 2, MemBytes: 256 << 20})
	return gpuComm(t, f, 0), f
}

// setEnv sets a variable for one test and reloads the settings.
func setEnv(t *testing.T, k, v string) {
	t.Cleanup(func() { env.Reload() }) // runs after Setenv restores k
	t.Setenv(k, v)
	env.Reload()
}

// openGPU opens GPU ordinal through drv (a cudafake, or the real driver).
func openGPU(drv cuda.Driver, ordinal int, timeout time.Duration) (*device.CUDADevice, error) {
	d, err := devlink.OpenGPU(drv, ordinal, timeout)
	if err != nil {
		return nil, err
	}
	return d.(*device.CUDADevice), nil
}
