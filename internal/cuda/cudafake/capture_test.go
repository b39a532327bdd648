package cudafake

import (
	"errors"
	"testing"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCaptureForkJoin: a stream that waits on an event recorded in a
// capture joins it (it reports the capture and its work goes into the
// graph); the capture ends on its origin only once every forked stream's
// work was joined back; a dependency across the capture's boundary is
// refused, as the driver does.
func TestCaptureForkJoin(t *testing.T) {
	f := setup(t, Config{})
	streams := make([]cuda.Stream, 4)
	for i := range streams {
		var err error
		streams[i], err = f.StreamCreate(cuda.StreamNonBlocking)
		require.NoError(t, err)
	}
	origin, side, eager, other := streams[0], streams[1], streams[2], streams[3]
	ev, err := f.EventCreate(cuda.EventDisableTiming)
	require.NoError(t, err)
	var order []int
	step := func(s cuda.Stream, v int) {
		require.NoError(t, f.LaunchHostFunc(s, func() { order = append(order, v) }))
	}

	require.NoError(t, f.StreamBeginCapture(origin, cuda.CaptureModeRelaxed))
	step(origin, 1)
	require.NoError(t, f.EventRecord(ev, origin))
	require.NoError(t, f.StreamWaitEvent(side, ev)) // fork
	info, err := f.StreamGetCaptureInfo(side)
	require.NoError(t, err)
	want, err := f.StreamGetCaptureInfo(origin)
	require.NoError(t, err)
	assert.Equal(t, want, info, "the forked stream reports the origin's capture")
	step(side, 2)

	// Across the boundary: an eager stream's event, a capture's event on
	// a stream in another capture.
	eagerEv, err := f.EventCreate(cuda.EventDisableTiming)
	require.NoError(t, err)
	require.NoError(t, f.EventRecord(eagerEv, eager))
	assert.True(t, errors.Is(f.StreamWaitEvent(side, eagerEv), cuda.ErrorStreamCaptureIsolation))
	require.NoError(t, f.StreamBeginCapture(other, cuda.CaptureModeRelaxed))
	assert.True(t, errors.Is(f.StreamWaitEvent(other, ev), cuda.ErrorStreamCaptureIsolation))
	g2, err := f.StreamEndCapture(other)
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(g2))

	_, err = f.StreamEndCapture(side)
	assert.True(t, errors.Is(err, cuda.ErrorStreamCaptureUnmatched), "only the origin ends the capture")
	require.NoError(t, f.EventRecord(ev, side))
	require.NoError(t, f.StreamWaitEvent(origin, ev)) // join
	step(origin, 3)
	g, err := f.StreamEndCapture(origin)
	require.NoError(t, err)
	info, err = f.StreamGetCaptureInfo(side)
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureNone, info.Status, "the end of the capture ends it on the forked stream too")
	exec, err := f.GraphInstantiate(g)
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(g))
	require.NoError(t, f.GraphLaunch(exec, origin))
	require.NoError(t, f.StreamSynchronize(origin))
	assert.Equal(t, []int{1, 2, 3}, order)
	require.NoError(t, f.GraphExecDestroy(exec))

	// A fork that is not joined back fails the capture.
	require.NoError(t, f.StreamBeginCapture(origin, cuda.CaptureModeRelaxed))
	require.NoError(t, f.EventRecord(ev, origin))
	require.NoError(t, f.StreamWaitEvent(side, ev))
	step(side, 4)
	_, err = f.StreamEndCapture(origin)
	assert.True(t, errors.Is(err, cuda.ErrorStreamCaptureUnjoined), "%v", err)
	info, err = f.StreamGetCaptureInfo(side)
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureNone, info.Status)
	for _, s := range streams {
		require.NoError(t, f.StreamSynchronize(s))
		require.NoError(t, f.StreamDestroy(s))
	}
	require.NoError(t, f.EventDestroy(ev))
	require.NoError(t, f.EventDestroy(eagerEv))
}
