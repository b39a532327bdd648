package gpu

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// TestGraphCaptureInvalidated: a capture that the application invalidates
// midway (a stream synchronisation while capturing, as a careless program
// does), after a captured all-reduce and before another, leaves the
// communicator usable. The launch into the invalidated capture is a typed
// error or nothing, never a crash; EndCapture fails; then every rank runs
// an eager all-reduce, and a new capture replayed three times, and checks
// every element of poisoned outputs. Sizes: one that takes the small
// kernels and one that takes the pipelined ones (or, across hosts, the
// ring's gather and its pipelined steps).
func TestGraphCaptureInvalidated(t *testing.T) {
	cm := world(t)
	dev, ok := cm.Device().(*device.CUDADevice)
	require.True(t, ok)
	drv := driverOf(dev)
	rank, n := cm.Rank(), cm.Count()
	var failures []error
	for _, count := range []int{1000, 700_001} {
		bufs := harness.NewBuffers(t, dev)
		s := bufs.Stream()
		in := harness.Inputs(uint64(21+count), n, gccl.Float32, count)
		send, recv := bufs.Alloc(4*count, in[rank]), bufs.Alloc(4*count, nil)
		want := reduce.Reference(in, gccl.Float32, gccl.Sum, 0)
		var launchErr, syncErr, afterErr, endErr error
		require.NoError(t, dev.Do(func() error {
			if err := drv.StreamBeginCapture(cuda.Stream(s), cuda.CaptureModeGlobal); err != nil {
				return err
			}
			launchErr = coll.AllReduce(cm, send, recv, count, gccl.Float32, gccl.Sum, s)
			syncErr = drv.StreamSynchronize(cuda.Stream(s)) // not allowed while capturing: invalidates it
			afterErr = coll.AllReduce(cm, recv, recv, count, gccl.Float32, gccl.Sum, s)
			g, err := drv.StreamEndCapture(cuda.Stream(s))
			if endErr = err; err == nil {
				_ = drv.GraphDestroy(g)
			}
			return nil
		}))
		require.NoError(t, launchErr, "count %d: the captured launch", count)
		require.Error(t, syncErr, "count %d: a stream synchronisation while capturing", count)
		require.Error(t, endErr, "count %d: EndCapture of an invalidated capture", count)
		t.Logf("rank %d count %d: sync %v; launch into the invalidated capture: %v; end: %v", rank, count, syncErr, afterErr, endErr)
		var gerr *gccl.Error
		if afterErr != nil && !errors.As(afterErr, &gerr) {
			failures = append(failures, fmt.Errorf("count %d: the launch into the invalidated capture failed with an untyped error: %w", count, afterErr))
		}

		poison := func() { require.NoError(t, dev.CopyIn(recv, harness.PoisonBytes(4*count))) }
		poison()
		err := firstError(coll.AllReduce(cm, send, recv, count, gccl.Float32, gccl.Sum, s), mpiboot.Wait(dev, s, 0))
		if err == nil {
			err = reduce.Check(bufs.Read(recv, 4*count), want, gccl.Float32, n)
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("count %d: eager after the invalidated capture: %w", count, err))
			continue
		}
		poison()
		exec := capture(t, dev, s, func() error { return coll.AllReduce(cm, send, recv, count, gccl.Float32, gccl.Sum, s) })
		for i := range 3 {
			err := firstError(dev.Do(func() error { return drv.GraphLaunch(exec, cuda.Stream(s)) }), mpiboot.Wait(dev, s, 0))
			if err == nil {
				err = reduce.Check(bufs.Read(recv, 4*count), want, gccl.Float32, n)
			}
			if err != nil {
				failures = append(failures, fmt.Errorf("count %d: replay %d of a new capture: %w", count, i, err))
				break
			}
		}
	}
	harness.Agree(t, failures)
}
