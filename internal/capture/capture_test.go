package capture

import (
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func setup(t *testing.T) (*cudafake.Fake, gccl.Stream) {
	f := cudafake.New(cudafake.Config{})
	ctx, err := f.PrimaryCtxRetain(0)
	require.NoError(t, err)
	require.NoError(t, f.CtxSetCurrent(ctx))
	s, err := f.StreamCreate(cuda.StreamNonBlocking)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.StreamDestroy(s) })
	return f, gccl.Stream(s)
}

// counter counts release calls and lets a test wait for them.
type counter chan struct{}

func (c counter) release() { c <- struct{}{} }

func (c counter) expect(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Fatal("release did not run")
		}
	}
	select {
	case <-c:
		t.Fatal("release ran too often")
	case <-time.After(20 * time.Millisecond):
	}
}

func TestCapturing(t *testing.T) {
	f, s := setup(t)
	on, id, err := Capturing(f, s)
	require.NoError(t, err)
	assert.False(t, on)
	assert.Zero(t, id)
	var ids []uint64
	for range 3 {
		require.NoError(t, f.StreamBeginCapture(cuda.Stream(s), cuda.CaptureModeThreadLocal))
		c, err := Info(f, s)
		require.NoError(t, err)
		assert.True(t, c.Active)
		assert.NotZero(t, c.Graph)
		ids = append(ids, c.ID)
		g, err := f.StreamEndCapture(cuda.Stream(s))
		require.NoError(t, err)
		assert.Equal(t, c.Graph, g)
		on, _, err = Capturing(f, s)
		require.NoError(t, err)
		assert.False(t, on)
		require.NoError(t, f.GraphDestroy(g))
	}
	assert.Len(t, map[uint64]bool{ids[0]: true, ids[1]: true, ids[2]: true}, 3, "capture IDs are unique")

	_, _, err = Capturing(nil, s)
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	_, _, err = Capturing(f, 12345)
	gccltest.RequireCode(t, err, gccl.UnhandledCudaError)
	_, _, err = Capturing(invalidated{f}, s)
	gccltest.RequireCode(t, err, gccl.InvalidUsage)
	assert.True(t, Invalidated(err), "Info's error: %v", err)
}

// TestInvalidated: Info's error and the driver's
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (also wrapped) say the capture
// was invalidated; other capture errors and nil do not.
func TestInvalidated(t *testing.T) {
	assert.True(t, Invalidated(cuda.NewError("cuLaunchKernel", cuda.ErrorStreamCaptureInvalidated, "")))
	assert.True(t, Invalidated(gccl.Errorf(gccl.UnhandledCudaError, "comm", "AllReduce: %w",
		cuda.NewError("cuLaunchKernel", cuda.ErrorStreamCaptureInvalidated, ""))))
	assert.False(t, Invalidated(cuda.NewError("cuStreamSynchronize", cuda.ErrorStreamCaptureUnsupported, "")))
	assert.False(t, Invalidated(cuda.NewError("cuLaunchKernel", cuda.ErrorIllegalAddress, "")))
	assert.False(t, Invalidated(gccl.Errorf(gccl.InvalidUsage, "stream", "another usage error")))
	assert.False(t, Invalidated(nil))
}

type invalidated struct{ *cudafake.Fake }

func (invalidated) StreamGetCaptureInfo(cuda.Stream) (cuda.CaptureInfo, error) {
	return cuda.CaptureInfo{Status: cuda.CaptureInvalidated, ID: 9}, nil
}

func TestRetain(t *testing.T) {
	f, s := setup(t)
	c := make(counter, 4)
	ok, err := Retain(f, s, c.release)
	require.NoError(t, err)
	assert.False(t, ok, "not capturing")
	c.expect(t, 0)

	// Released when the graph and its instantiation are both gone.
	require.NoError(t, f.StreamBeginCapture(cuda.Stream(s), cuda.CaptureModeGlobal))
	for range 2 {
		ok, err = Retain(f, s, c.release)
		require.NoError(t, err)
		require.True(t, ok)
	}
	g, err := f.StreamEndCapture(cuda.Stream(s))
	require.NoError(t, err)
	e, err := f.GraphInstantiate(g)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, f.GraphLaunch(e, cuda.Stream(s)))
	}
	require.NoError(t, f.StreamSynchronize(cuda.Stream(s)))
	require.NoError(t, f.GraphDestroy(g))
	c.expect(t, 0) // the executable graph still holds them
	require.NoError(t, f.GraphExecDestroy(e))
	c.expect(t, 2)

	// Destroying an uninstantiated graph releases too.
	require.NoError(t, f.StreamBeginCapture(cuda.Stream(s), cuda.CaptureModeRelaxed))
	ok, err = Retain(f, s, c.release)
	require.NoError(t, err)
	require.True(t, ok)
	g, err = f.StreamEndCapture(cuda.Stream(s))
	require.NoError(t, err)
	c.expect(t, 0)
	require.NoError(t, f.GraphDestroy(g))
	c.expect(t, 1)
}

// refuse fails cuGraphRetainUserObject.
type refuse struct{ *cudafake.Fake }

func (refuse) GraphRetainUserObject(cuda.Graph, cuda.UserObject, int, bool) error {
	return cuda.NewError("cuGraphRetainUserObject", cuda.ErrorInvalidValue, "(test)")
}

func TestRetainErrors(t *testing.T) {
	f, s := setup(t)
	_, err := Retain(f, s, nil)
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	require.NoError(t, f.StreamBeginCapture(cuda.Stream(s), cuda.CaptureModeGlobal))
	c := make(counter, 1)
	ok, err := Retain(refuse{f}, s, c.release)
	gccltest.RequireCode(t, err, gccl.UnhandledCudaError)
	assert.False(t, ok)
	c.expect(t, 0) // the caller keeps its resource on error
	g, err := f.StreamEndCapture(cuda.Stream(s))
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(g))
}
