package comm

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingDriver is a fake GPU that counts the holds on its primary context.
type countingDriver struct {
	*cudafake.Fake
	retains, releases atomic.Int32
	live              atomic.Int32 // cuMemAlloc allocations not freed
}

func (d *countingDriver) MemAlloc(n int) (uintptr, error) {
	p, err := d.Fake.MemAlloc(n)
	if err == nil {
		d.live.Add(1)
	}
	return p, err
}

func (d *countingDriver) MemFree(p uintptr) error {
	err := d.Fake.MemFree(p)
	if err == nil {
		d.live.Add(-1)
	}
	return err
}

func (d *countingDriver) PrimaryCtxRetain(dev cuda.Device) (cuda.Context, error) {
	d.retains.Add(1)
	return d.Fake.PrimaryCtxRetain(dev)
}

func (d *countingDriver) PrimaryCtxRelease(dev cuda.Device) error {
	d.releases.Add(1)
	return d.Fake.PrimaryCtxRelease(dev)
}

// fakeGPU puts a counting fake GPU behind device.Open(device.CUDA, n) for
// the rest of the test; the communicators run on the host-staged GPU
// backend (GCCL_P2P_DISABLE=1), which needs no kernels.
func fakeGPU(t *testing.T) *countingDriver {
	d := &countingDriver{Fake: cudafake.New(cudafake.Config{})}
	t.Cleanup(devlink.SetLoader(func() (cuda.Driver, error) { return d, nil }))
	t.Setenv("GCCL_P2P_DISABLE", "1")
	env.Reload()
	t.Cleanup(func() { env.Reload() })
	return d
}

func gpuComms(t *testing.T, n int, use device.Device) []*Comm {
	t.Helper()
	id, err := NewUniqueID()
	require.NoError(t, err)
	comms, errs := gccltest.Parallel(n, func(r int) (*Comm, error) {
		return InitRankConfig(n, id, r, &Config{Backend: device.CUDA, UseDevice: use, Timeout: 20 * time.Second, Blocking: ptr(true)})
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return comms
}

// TestCommClosesItsDevice: a communicator that opened its GPU releases the
// primary context exactly once, and frees the memory its device allocated,
// whether it is closed or aborted, and however often.
func TestCommClosesItsDevice(t *testing.T) {
	for _, abort := range []bool{false, true} {
		for _, n := range []int{1, 3} {
			d := fakeGPU(t)
			comms := gpuComms(t, n, nil)
			require.Equal(t, int32(n), d.retains.Load(), "one hold per rank")
			for _, c := range comms {
				require.Equal(t, device.CUDA, c.Device().Kind())
				_, err := c.Device().Alloc(1 << 20)
				require.NoError(t, err)
			}
			require.GreaterOrEqual(t, d.live.Load(), int32(n))
			_, errs := gccltest.Parallel(n, func(r int) (any, error) {
				if abort {
					return nil, comms[r].Abort()
				}
				return nil, comms[r].Close()
			})
			for r, err := range errs {
				require.NoError(t, err, "rank %d (abort %v)", r, abort)
			}
			for _, c := range comms {
				assert.NoError(t, c.Close())
				assert.NoError(t, c.Abort())
			}
			assert.Equal(t, int32(n), d.releases.Load(), "%d ranks, abort %v: every hold released once", n, abort)
			assert.Zero(t, d.live.Load(), "%d ranks, abort %v: the ranks' allocations are freed", n, abort)
		}
	}
}

// TestCommLeavesSuppliedDevice: Config.UseDevice stays open and usable
// after the communicator is closed; its owner closes it.
func TestCommLeavesSuppliedDevice(t *testing.T) {
	d := fakeGPU(t)
	g, err := devlink.OpenGPU(d, 0, 10*time.Second)
	require.NoError(t, err)
	dev := g.(*device.CUDADevice)
	comms := gpuComms(t, 2, dev)
	for _, c := range comms {
		assert.Same(t, dev, c.Device())
	}
	p, err := dev.Alloc(4096)
	require.NoError(t, err)
	_, errs := gccltest.Parallel(2, func(r int) (any, error) { return nil, comms[r].Close() })
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	assert.Equal(t, int32(1), d.retains.Load())
	assert.Zero(t, d.releases.Load(), "a supplied device is the caller's to close")
	want := []byte{1, 2, 3, 4}
	require.NoError(t, dev.CopyIn(p, want), "the supplied device still works")
	got := make([]byte, 4)
	require.NoError(t, dev.CopyOut(got, p))
	assert.Equal(t, want, got)
	require.NoError(t, dev.Close())
	assert.Equal(t, int32(1), d.releases.Load())
}
