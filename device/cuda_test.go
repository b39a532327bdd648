package device

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openFake(t *testing.T, cfg cudafake.Config, ordinal int) (*cudafake.Fake, *CUDADevice) {
	f := cudafake.New(cfg)
	d, err := openCUDADriver(f, ordinal, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return f, d
}

// exercise runs the Device contract on d with random data.
func exercise(t *testing.T, d Device) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 7, 4096, 100_003} {
		p, err := d.Alloc(n)
		require.NoError(t, err)
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		require.NoError(t, d.CopyIn(p, src))
		got := make([]byte, n)
		for i := range got {
			got[i] = ^src[i] // poison
		}
		require.NoError(t, d.CopyOut(got, p))
		require.Equal(t, src, got)
		require.NoError(t, Memset(d, p, 0x5A, n))
		require.NoError(t, d.CopyOut(got, p))
		for i := range got {
			require.Equal(t, byte(0x5A), got[i], "byte %d", i)
		}
		err = d.CopyIn(p, append(src, 0))
		assert.True(t, errors.Is(err, gccl.ErrInvalidArgument), "overrun: %v", err)
		require.NoError(t, d.Free(p))
		assert.True(t, errors.Is(d.Free(p), gccl.ErrInvalidArgument), "double free")
	}
	s, err := d.NewStream()
	require.NoError(t, err)
	done, err := d.Query(s)
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, d.Synchronize(s))
	require.NoError(t, d.DestroyStream(s))
	assert.True(t, errors.Is(d.DestroyStream(s), gccl.ErrInvalidArgument))
}

func TestCUDADeviceOnFake(t *testing.T) {
	_, d := openFake(t, cudafake.Config{Devices: 2}, 1)
	assert.Equal(t, CUDA, d.Kind())
	assert.Equal(t, 1, d.Ordinal())
	exercise(t, d)
}

func TestCUDADeviceSynchronizeTimesOut(t *testing.T) {
	f, d := openFake(t, cudafake.Config{WaitTimeout: 5 * time.Second}, 0)
	d.timeout = 50 * time.Millisecond
	s, err := d.NewStream()
	require.NoError(t, err)
	release := make(chan struct{})
	require.NoError(t, f.LaunchHostFunc(cuda.Stream(s), func() { <-release }))
	start := time.Now()
	err = d.Synchronize(s)
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "%v", err)
	assert.Less(t, time.Since(start), 2*time.Second)
	close(release)
	require.NoError(t, d.Synchronize(s))
}

func TestCUDADeviceErrors(t *testing.T) {
	f := cudafake.New(cudafake.Config{Devices: 2})
	_, err := openCUDADriver(f, 2, 0)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument))
	_, err = openCUDADriver(nil, 0, 0)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument))
	d, err := openCUDADriver(f, 0, 0)
	require.NoError(t, err)
	_, err = d.Alloc(-1)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument))
	p, err := d.Alloc(0)
	require.NoError(t, err)
	assert.NotZero(t, p)
	require.NoError(t, d.Close())
	require.NoError(t, d.Close())
	var nilDev *CUDADevice
	require.NoError(t, nilDev.Close())
	_, err = d.Alloc(8)
	assert.True(t, errors.Is(err, gccl.ErrInvalidUsage), "closed device: %v", err)
	assert.True(t, errors.Is(f.PrimaryCtxRelease(0), cuda.ErrorInvalidContext), "Close released the context once")
}

// TestOpenCUDAWithoutDriver: with no libcuda, Open(CUDA) wraps ErrNoDriver
// and Auto falls back to the host.
func TestOpenCUDAWithoutDriver(t *testing.T) {
	if cuda.Available() {
		t.Skip("a CUDA driver is present")
	}
	_, err := Open(CUDA, 0)
	assert.True(t, errors.Is(err, ErrNoDriver), "%v", err)
}

// TestCUDADeviceOnGPU runs the same contract on a real GPU.
func TestCUDADeviceOnGPU(t *testing.T) {
	drv := cudatest.RequireGPU(t, 1)
	d, err := openCUDADriver(drv, 0, 30*time.Second)
	require.NoError(t, err)
	defer d.Close()
	exercise(t, d)
}
