package group_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/stretchr/testify/require"
)

// within runs f and fails the test if it has not returned after d (a
// deadlock), or returned an error.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(d):
		t.Fatalf("%s: not done after %v (deadlock)", what, d)
	}
}

// initAll is comm.InitAllN(n); the communicators are closed when the test
// ends (aborted if it failed, so that a deadlocked test ends at once).
func initAll(t *testing.T, n int) []*comm.Comm {
	t.Helper()
	comms, err := comm.InitAllN(n)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			if t.Failed() {
				_ = c.Abort()
			} else {
				_ = c.Close()
			}
		}
	})
	return comms
}

// int32s allocates n int32 on d, all set to v.
func int32s(t *testing.T, d device.Device, n int, v int32) uintptr {
	t.Helper()
	p, err := d.Alloc(4 * n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Free(p) })
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	require.NoError(t, d.CopyIn(p, b))
	return p
}

// checkInt32s checks that the n int32 at p on d are all want.
func checkInt32s(d device.Device, p uintptr, n int, want int32) error {
	b := make([]byte, 4*n)
	if err := d.CopyOut(b, p); err != nil {
		return err
	}
	for i := range n {
		if got := int32(binary.LittleEndian.Uint32(b[4*i:])); got != want {
			return fmt.Errorf("element %d is %d, want %d", i, got, want)
		}
	}
	return nil
}

// TestDefaultStreamPerDevice: stream 0 is each device's own default stream
// (as CUDA's legacy stream), so InitAll(4) and one group of AllReduce on
// stream 0 completes.
func TestDefaultStreamPerDevice(t *testing.T) {
	const n, count = 4, 1000
	comms := initAll(t, n)
	bufs := make([]uintptr, n)
	g := group.New()
	for r, c := range comms {
		bufs[r] = int32s(t, c.Device(), count, int32(r+1))
		g.AllReduce(c, bufs[r], bufs[r], count, gccl.Int32, gccl.Sum, 0)
	}
	within(t, 20*time.Second, "group on stream 0", func() error {
		if err := g.End(); err != nil {
			return err
		}
		for r, c := range comms {
			if err := c.Device().Synchronize(0); err != nil {
				return err
			}
			if err := checkInt32s(c.Device(), bufs[r], count, n*(n+1)/2); err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
		}
		return nil
	})
}
