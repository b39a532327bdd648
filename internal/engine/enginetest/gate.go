package enginetest

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Gate makes streams ss of d, a device on fake f, wait until open is called:
// work enqueued on them meanwhile stays in flight. A cleanup opens the gate
// (again: it is idempotent) and drains the streams before freeing its word.
func Gate(t testing.TB, f *cudafake.Fake, d *device.CUDADevice, ss ...gccl.Stream) (open func()) {
	var w uintptr
	require.NoError(t, d.Do(func() (err error) {
		w, err = f.MemHostAlloc(64, cuda.HostAllocDeviceMap)
		return err
	}))
	open = func() { atomic.StoreUint32((*uint32)(unsafe.Pointer(unsafe.SliceData(device.HostBytes(w, 4)))), 1) }
	t.Cleanup(func() {
		open()
		for _, s := range ss {
			_ = d.Synchronize(s) // a test may have destroyed it, or broken it on purpose
		}
		assert.NoError(t, f.MemFreeHost(w))
	})
	for _, s := range ss {
		require.NoError(t, f.StreamWaitValue32(cuda.Stream(s), w, 1, cuda.WaitValueGEQ))
	}
	return open
}
