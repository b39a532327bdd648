package hoststream

import (
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistryRoundTrip(t *testing.T) {
	const n = 64
	streams := make([]*Stream, n)
	handles := make([]gccl.Stream, n)
	var wg sync.WaitGroup
	for i := range n {
		streams[i] = New()
		wg.Add(1)
		go func() { defer wg.Done(); handles[i] = Register(streams[i]) }()
	}
	wg.Wait()
	seen := map[gccl.Stream]bool{}
	for i, h := range handles {
		require.NotZero(t, h)
		require.False(t, seen[h], "handle %#x issued twice", uintptr(h))
		seen[h] = true
		got, err := Lookup(i%3, h)
		require.NoError(t, err)
		require.Same(t, streams[i], got)
	}
	for i, h := range handles {
		got, err := Unregister(h)
		require.NoError(t, err)
		require.Same(t, streams[i], got)
		_, err = Lookup(0, h)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
		assert.Equal(t, "stream", err.(*gccl.Error).Arg)
		_, err = Unregister(h)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
		require.NoError(t, got.Close())
	}
}

func TestUnknownHandles(t *testing.T) {
	for _, h := range []gccl.Stream{1, 42, handleBase, handleBase + 1<<20, ^gccl.Stream(0)} {
		_, err := Lookup(0, h)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "handle %#x", uintptr(h))
		assert.Equal(t, "stream", err.(*gccl.Error).Arg)
	}
}

func TestDefaultStream(t *testing.T) {
	s, err := Lookup(0, 0)
	require.NoError(t, err)
	require.Same(t, Default(0), s)
	ran := false
	require.NoError(t, s.Enqueue(func() error { ran = true; return nil }))
	require.NoError(t, s.Synchronize(ctxFor(t, 10*time.Second)))
	assert.True(t, ran)
	_, err = Unregister(0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

// TestDefaultStreamPerDevice: as CUDA's legacy default stream, stream 0 is
// one stream per device, so work on device 1's stream 0 does not wait for
// device 0's.
func TestDefaultStreamPerDevice(t *testing.T) {
	s0, err := Lookup(0, 0)
	require.NoError(t, err)
	s1, err := Lookup(1, 0)
	require.NoError(t, err)
	require.NotSame(t, s0, s1)
	again, err := Lookup(1, 0)
	require.NoError(t, err)
	require.Same(t, s1, again)

	release := make(chan struct{})
	require.NoError(t, s0.Enqueue(func() error { <-release; return nil }))
	require.NoError(t, s1.Synchronize(ctxFor(t, 10*time.Second)), "device 1's stream 0 waits for device 0's")
	close(release)
	require.NoError(t, s0.Synchronize(ctxFor(t, 10*time.Second)))
}
