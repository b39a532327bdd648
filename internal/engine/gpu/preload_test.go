package gpu

import (
	"testing"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreloadLoadsKernelsAndReservesStack: a backend's setup finishes
// loading every kernel of its module (cuFuncLoad) and raises the
// context's stack limit to what the largest kernel needs, never lowering
// it, and sets it even when unchanged (so that the driver reserves the
// local memory then), so that no launch later loads a kernel or resizes local memory
// (either can wait for the kernels running in the context: the in-process
// first-batch deadlock).
func TestPreloadLoadsKernelsAndReservesStack(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit, need int
		want        int
	}{
		{"raised", 1024, 4096, 4096},
		{"kept when enough", 1024, 288, 1024},
		{"never lowered", 8192, 4096, 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := cudafake.New(cudafake.Config{MemBytes: 256 << 20})
			standIns(f)
			f.SetLocalBytes("gccl_reducescatter_i32_sum", tc.need)
			drv := &limitCounter{Fake: f}
			d := openGPU(t, drv)
			t.Cleanup(func() { assert.NoError(t, d.Close()) })
			require.NoError(t, d.Do(func() error { return f.CtxSetLimit(cuda.LimitStackSize, tc.limit) }))
			g := newBackendState(d, testSetup(0, 1, enginetest.NewNet(1).Rank(0), d), Config{})
			require.NoError(t, d.Do(func() error { return g.allocate([]byte("stand-in kernels")) }))
			t.Cleanup(func() { assert.NoError(t, d.Do(g.free)) })
			assert.True(t, f.Loaded("gccl_allreduce_twoshot_i32_sum"), "a kernel was left for its first launch to load")
			assert.True(t, f.Loaded("gccl_reducescatter_i32_sum"))
			var got int
			require.NoError(t, d.Do(func() (err error) { got, err = f.CtxLimit(cuda.LimitStackSize); return err }))
			assert.Equal(t, tc.want, got)
			assert.Equal(t, 1, drv.sets, "setup sets the limit once, changed or not")
		})
	}
}

// limitCounter counts CtxSetLimit calls.
type limitCounter struct {
	*cudafake.Fake
	sets int
}

func (c *limitCounter) CtxSetLimit(l cuda.Limit, v int) error {
	c.sets++
	return c.Fake.CtxSetLimit(l, v)
}
