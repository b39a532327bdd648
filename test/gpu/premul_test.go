package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// premulScalar is rank r's PreMulSum scalar for t: different on every
// rank (NCCL's Σ_r s_r·x_r), and for the 64-bit integers beyond what a
// float64 holds (a uint64 from 2^63, an int64 below -2^53).
func premulScalar(t gccl.DataType, r int) []byte {
	switch t {
	case gccl.Uint64:
		return binary.LittleEndian.AppendUint64(nil, 1<<63+3+2*uint64(r))
	case gccl.Int64:
		return binary.LittleEndian.AppendUint64(nil, uint64(-(1<<53 + 1 + 2*int64(r))))
	case gccl.Int32:
		return binary.LittleEndian.AppendUint32(nil, uint32(r+2))
	}
	b := make([]byte, 4) // Float32
	binary.LittleEndian.PutUint32(b, math.Float32bits(1.5+0.25*float32(r)))
	return b
}

// hostPtr is the address of b's first byte (a host-immediate scalar, which
// CreatePreMulSum copies at once).
func hostPtr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// premulCase runs one premulsum collective: kind on count elements of dt,
// this rank's scalar on the device (ScalarDevice) on odd ranks, the
// operator destroyed right after the call returns; it checks the result
// against reduce.PreMulSumReference.
func premulCase(t *testing.T, cm *comm.Comm, kind string, dt gccl.DataType, count int) error {
	n, me, es := cm.Count(), cm.Rank(), dt.Size()
	sendCount := count
	if kind == "reducescatter" {
		sendCount = n * count
	}
	seed := uint64(7000 + count + int(dt))
	bufs := harness.NewBuffers(t, cm.Device())
	s := bufs.Stream()
	send := bufs.Alloc(sendCount*es, harness.Input(seed, me, dt, sendCount))
	recv := bufs.Alloc(count*es, nil)
	scalars := make([][]byte, n)
	for r := range n {
		scalars[r] = premulScalar(dt, r)
	}
	res, p := coll.ScalarHostImmediate, hostPtr(scalars[me])
	if me%2 == 1 {
		res, p = coll.ScalarDevice, bufs.Alloc(es, scalars[me])
	}
	op, err := coll.CreatePreMulSum(cm, p, dt, res)
	if err != nil {
		return err
	}
	const root = 0
	switch kind {
	case "allreduce":
		err = coll.AllReduce(cm, send, recv, count, dt, op, s)
	case "reducescatter":
		err = coll.ReduceScatter(cm, send, recv, count, dt, op, s)
	default:
		err = coll.Reduce(cm, send, recv, count, dt, op, root, s)
	}
	if derr := coll.DestroyRedOp(cm, op); err == nil {
		err = derr
	}
	if err == nil {
		err = mpiboot.Wait(cm.Device(), s, 0)
	}
	if err != nil || kind == "reduce" && me != root {
		return err
	}
	want := reduce.PreMulSumReference(harness.Inputs(seed, n, dt, sendCount), dt, scalars)
	if kind == "reducescatter" {
		want = want[me*count*es : (me+1)*count*es]
	}
	return reduce.Check(bufs.Read(recv, count*es), want, dt, n)
}

// TestPreMulSumPerRankScalars: premulsum with a different scalar on every
// rank (host and device residences, 64-bit integer scalars no float64
// holds) for all-reduce, reduce-scatter and reduce at one-shot, push and
// staged sizes, each operator destroyed as soon as its call returned.
func TestPreMulSumPerRankScalars(t *testing.T) {
	cm := world(t)
	var failures []error
	for _, kind := range []string{"allreduce", "reducescatter", "reduce"} {
		for _, dt := range []gccl.DataType{gccl.Float32, gccl.Int32, gccl.Int64, gccl.Uint64} {
			for _, count := range []int{1, 4099, 300_001, 1_000_003} {
				if err := premulCase(t, cm, kind, dt, count); err != nil {
					failures = append(failures, fmt.Errorf("%s %v count %d rank %d: %w", kind, dt, count, cm.Rank(), err))
				}
			}
		}
	}
	harness.Agree(t, failures)
}

// TestPreMulSumDeviceScalarInGraph: a premulsum all-reduce captured in
// global mode with this rank's scalar in device memory (ScalarDevice)
// reads it when each replay runs: changing it between replays changes the
// result, and capturing needs no synchronous copy.
func TestPreMulSumDeviceScalarInGraph(t *testing.T) {
	cm := world(t)
	dev := cm.Device().(*device.CUDADevice)
	n, me := cm.Count(), cm.Rank()
	const count = 4099
	bufs := harness.NewBuffers(t, dev)
	s := bufs.Stream()
	send := bufs.Alloc(4*count, harness.Input(11, me, gccl.Int32, count))
	recv := bufs.Alloc(4*count, nil)
	sp := bufs.Alloc(4, premulScalar(gccl.Int32, me))
	op, err := coll.CreatePreMulSum(cm, sp, gccl.Int32, coll.ScalarDevice)
	require.NoError(t, err)
	exec := captureIn(t, dev, s, cuda.CaptureModeGlobal, func() error {
		return coll.AllReduce(cm, send, recv, count, gccl.Int32, op, s)
	})
	require.NoError(t, coll.DestroyRedOp(cm, op)) // the graph keeps what it needs
	var failures []error
	for replay := range 3 {
		scalars := make([][]byte, n)
		for r := range n {
			scalars[r] = binary.LittleEndian.AppendUint32(nil, uint32(r+2+10*replay))
		}
		require.NoError(t, dev.CopyIn(sp, scalars[me]))
		err := dev.Do(func() error { return driverOf(dev).GraphLaunch(exec, cuda.Stream(s)) })
		if err == nil {
			err = mpiboot.Wait(dev, s, 0)
		}
		if err == nil {
			want := reduce.PreMulSumReference(harness.Inputs(11, n, gccl.Int32, count), gccl.Int32, scalars)
			err = reduce.Check(bufs.Read(recv, 4*count), want, gccl.Int32, n)
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("replay %d rank %d: %w", replay, me, err))
		}
	}
	harness.Agree(t, failures)
}
