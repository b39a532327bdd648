package ctlblock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuard: Load reads the status word until Stop; the first Stop raises
// the abort word for an abort and reports itself, a second reports
// nothing; Free leaves no block.
func TestGuard(t *testing.T) {
	for _, abort := range []bool{false, true} {
		f := cudafake.New(cudafake.Config{})
		dv, err := devlink.OpenGPU(f, 0, time.Second)
		require.NoError(t, err)
		dev := dv.(*device.CUDADevice)
		var g Guard
		assert.Equal(t, uint32(kernels.StatusOK), g.Load(), "no block yet")
		require.NoError(t, dev.Do(func() (err error) { g.Block, err = Alloc(f); return err }))
		atomic.StoreUint32(g.StatusWord(), kernels.StatusTimeout)
		assert.Equal(t, uint32(kernels.StatusTimeout), g.Load())
		assert.ErrorIs(t, Err(g.Load()), gccl.ErrTimeout)
		stopped, err := g.Stop(abort, dev, f)
		assert.True(t, stopped)
		assert.NoError(t, err)
		assert.Equal(t, abort, atomic.LoadUint32(g.word(abortWord)) == 1, "abort word with abort=%v", abort)
		assert.Equal(t, uint32(kernels.StatusOK), g.Load(), "Load after Stop")
		stopped, err = g.Stop(abort, dev, f)
		assert.False(t, stopped, "a second Stop")
		assert.NoError(t, err)
		require.NoError(t, dev.Do(func() error { return g.Free(f) }))
		assert.Zero(t, g.Block)
		require.NoError(t, dev.Close())
	}
}
