package gpu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// capture records fn's launches on s into an instantiated graph (relaxed capture).
func capture(t *testing.T, dev *device.CUDADevice, s gccl.Stream, fn func() error) cuda.GraphExec {
	t.Helper()
	return captureIn(t, dev, s, cuda.CaptureModeRelaxed, fn)
}

// captureIn is capture in the given capture mode.
func captureIn(t *testing.T, dev *device.CUDADevice, s gccl.Stream, mode cuda.CaptureMode, fn func() error) cuda.GraphExec {
	t.Helper()
	drv := driverOf(dev)
	var exec cuda.GraphExec
	require.NoError(t, dev.Do(func() error {
		if err := drv.StreamBeginCapture(cuda.Stream(s), mode); err != nil {
			return err
		}
		ferr := fn()
		g, err := drv.StreamEndCapture(cuda.Stream(s))
		if ferr != nil || err != nil {
			return fmt.Errorf("capturing: %v / %v", ferr, err)
		}
		defer drv.GraphDestroy(g)
		exec, err = drv.GraphInstantiate(g)
		return err
	}))
	t.Cleanup(func() { _ = dev.Do(func() error { return drv.GraphExecDestroy(exec) }) })
	return exec
}

// TestGraphReplayMixedWithEager captures A→B and B→A int32 sum all-reduces
// (one-shot size) and a pipelined-size all-reduce, replays the graph 1000
// times with eager all-reduces of other sizes in between, and checks the
// values every 100 replays against the host's simulation: the kernels'
// epochs and barrier counts live in device memory, so replays stay in step.
func TestGraphReplayMixedWithEager(t *testing.T) {
	cm := world(t)
	dev, ok := cm.Device().(*device.CUDADevice)
	require.True(t, ok)
	rank, n := cm.Rank(), cm.Count()
	bufs := harness.NewBuffers(t, dev)
	s := bufs.Stream()
	const small, big, eager = 1000, 700_001, 33
	state := harness.Inputs(7, n, gccl.Int32, small)
	a := bufs.Alloc(4*small, state[rank])
	b := bufs.Alloc(4*small, nil)
	bigIn := harness.Inputs(8, n, gccl.Float32, big)
	bigSend, bigRecv := bufs.Alloc(4*big, bigIn[rank]), bufs.Alloc(4*big, nil)
	bigWant := reduce.Reference(bigIn, gccl.Float32, gccl.Sum, 0)
	eagerIn := harness.Inputs(9, n, gccl.Uint8, eager)
	eagerBuf := bufs.Alloc(eager, nil)
	eagerWant := reduce.Reference(eagerIn, gccl.Uint8, gccl.Max, 0)
	exec := capture(t, dev, s, func() error {
		return firstError(coll.AllReduce(cm, a, b, small, gccl.Int32, gccl.Sum, s),
			coll.AllReduce(cm, b, a, small, gccl.Int32, gccl.Sum, s),
			coll.AllReduce(cm, bigSend, bigRecv, big, gccl.Float32, gccl.Sum, s))
	})
	var failures []error
	for i := 1; i <= 1000 && len(failures) == 0; i++ {
		err := dev.Do(func() error { return driverOf(dev).GraphLaunch(exec, cuda.Stream(s)) })
		s1 := reduce.Reference(state, gccl.Int32, gccl.Sum, 0)
		state = repeat(s1, n)
		state = repeat(reduce.Reference(state, gccl.Int32, gccl.Sum, 0), n)
		if err == nil && i%10 == 0 {
			// The synchronous copy is not ordered with s: wait for s first.
			if err = mpiboot.Wait(dev, s, 0); err == nil {
				require.NoError(t, dev.CopyIn(eagerBuf, eagerIn[rank]))
				err = coll.AllReduce(cm, eagerBuf, eagerBuf, eager, gccl.Uint8, gccl.Max, s)
			}
		}
		if err == nil && i%100 == 0 {
			err = mpiboot.Wait(dev, s, 0)
			if err == nil {
				err = firstError(reduce.Check(bufs.Read(a, 4*small), state[rank], gccl.Int32, n),
					reduce.Check(bufs.Read(b, 4*small), s1, gccl.Int32, n),
					reduce.Check(bufs.Read(bigRecv, 4*big), bigWant, gccl.Float32, n),
					reduce.Check(bufs.Read(eagerBuf, eager), eagerWant, gccl.Uint8, n))
			}
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("replay %d: %w", i, err))
		}
	}
	harness.Agree(t, failures)
}

func repeat(b []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Clone(b)
	}
	return out
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// driverOf is the CUDA driver that dev calls.
func driverOf(dev *device.CUDADevice) cuda.Driver {
	drv, _ := devlink.Driver(dev)
	return drv
}
