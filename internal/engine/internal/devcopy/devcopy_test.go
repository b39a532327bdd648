package devcopy

import (
	"bytes"
	"testing"

	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAsync: the bytes arrive in stream order; an empty or in-place copy
// calls no driver (here: pointers of no allocation, which the driver
// would refuse).
func TestAsync(t *testing.T) {
	f := cudafake.New(cudafake.Config{})
	ctx, err := f.PrimaryCtxRetain(0)
	require.NoError(t, err)
	require.NoError(t, f.CtxSetCurrent(ctx))
	src, err := f.MemAlloc(64)
	require.NoError(t, err)
	dst, err := f.MemAlloc(64)
	require.NoError(t, err)
	want := bytes.Repeat([]byte{0x5a, 0xc3, 7}, 21)
	require.NoError(t, f.MemcpyHtoD(src, want[:63]))
	require.NoError(t, Async(f, dst, src, 63, 0))
	require.NoError(t, f.StreamSynchronize(0))
	got := make([]byte, 63)
	require.NoError(t, f.MemcpyDtoH(got, dst))
	assert.Equal(t, want[:63], got)

	const nowhere = uintptr(0xdead0000)
	require.Error(t, f.MemcpyDtoDAsync(nowhere, src, 8, 0), "the driver refuses a pointer of no allocation")
	assert.NoError(t, Async(f, nowhere, src, 0, 0), "no bytes")
	assert.NoError(t, Async(f, nowhere, nowhere, 8, 0), "in place")
}
