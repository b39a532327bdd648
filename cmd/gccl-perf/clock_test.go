package main

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGPU is a CUDA device on the fake driver with one stream.
func fakeGPU(t *testing.T) (*device.CUDADevice, gccl.Stream) {
	t.Helper()
	d, err := openFakeGPU(cudafake.New(cudafake.Config{}), 0, 10*time.Second)
	require.NoError(t, err)
	s, err := d.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d, s
}

// fakeLib is a stream library on the fake driver: an operation copies the
// send buffer to the receive buffer (the one-rank broadcast: short copies
// the last element less, to make a wrong result), then sleeps delay in
// stream order, as a kernel of known length would run.
type fakeLib struct {
	name     string
	dev      *device.CUDADevice
	gstream  gccl.Stream
	drv      cuda.Driver
	stream   cuda.Stream
	delay    time.Duration
	short    bool
	fail     error        // returned by Launch when set
	launches atomic.Int64 // Launch calls
	ran      atomic.Int64 // operations the stream executed

	mu   sync.Mutex
	regs map[uintptr]int // registrar: base -> size
}

func newFakeLib(d *device.CUDADevice, s gccl.Stream, delay time.Duration) *fakeLib {
	return &fakeLib{name: "fake", dev: d, gstream: s, drv: gpuDriver(d), stream: cuda.Stream(s), delay: delay, regs: map[uintptr]int{}}
}

func (f *fakeLib) Name() string { return f.name }
func (f *fakeLib) Supports(perf.Op, gccl.DataType, gccl.RedOp, bool) error {
	return nil
}
func (f *fakeLib) Close() error { return nil }

func (f *fakeLib) Launch(c call) error {
	f.launches.Add(1)
	if f.fail != nil {
		return f.fail
	}
	n := c.Count * c.Type.Size()
	if f.short && n > 0 {
		n -= c.Type.Size()
	}
	if n > 0 {
		if err := f.drv.MemcpyDtoDAsync(c.Recv, c.Send, n, f.stream); err != nil {
			return err
		}
	}
	return f.drv.LaunchHostFunc(f.stream, func() { time.Sleep(f.delay); f.ran.Add(1) })
}

func (f *fakeLib) Register(p uintptr, size int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.regs[p]; dup {
		return errors.New("registered twice")
	}
	f.regs[p] = size
	return nil
}

func (f *fakeLib) Deregister(p uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.regs[p]; !ok {
		return errors.New("not registered")
	}
	delete(f.regs, p)
	return nil
}

// fakeCall is a one-rank broadcast of count float32 elements between two
// fresh device buffers.
func fakeCall(t *testing.T, d *device.CUDADevice, count int) call {
	send, err := d.Alloc(4 * count)
	require.NoError(t, err)
	recv, err := d.Alloc(4 * count)
	require.NoError(t, err)
	return call{Op: perf.Broadcast, Send: send, Recv: recv, Count: count, Type: gccl.Float32, NRanks: 1}
}

func TestBatchFor(t *testing.T) {
	for size, want := range map[int64]int{0: 32, 8: 32, 32 << 10: 32, 64 << 10: 16, 256 << 10: 4,
		1<<20 - 1: 2, 1 << 20: 1, 1 << 30: 1} {
		assert.Equal(t, want, batchFor(0, size), "size %d", size)
	}
	assert.Equal(t, 5, batchFor(5, 8))
	assert.Equal(t, 5, batchFor(5, 1<<30))
}

// The eager clock puts a batch of operations between two events and
// divides: each sample is one operation's time, not the batch's.
func TestEventClockBatches(t *testing.T) {
	d, s := fakeGPU(t)
	const delay, batch, iters, warmup = 2 * time.Millisecond, 8, 3, 2
	cfg := config{iters: iters, warmup: warmup, batch: batch, timeout: 10 * time.Second}
	clk, err := newClock(cfg, d, s)
	require.NoError(t, err)
	defer clk.Close()
	require.IsType(t, &eventClock{}, clk)
	lib := newFakeLib(d, s, delay)
	times, err := clk.times(lib, fakeCall(t, d, 16), 64)
	require.NoError(t, err)
	require.Len(t, times, iters)
	assert.Equal(t, iters, clk.samples())
	for i, d := range times {
		assert.GreaterOrEqual(t, d, delay, "sample %d", i)
		assert.Less(t, d, batch*delay, "sample %d must be divided by the batch", i)
	}
	assert.EqualValues(t, warmup+iters*batch, lib.launches.Load())
	assert.EqualValues(t, warmup+iters*batch, lib.ran.Load(), "every launch ran before its sample ended")
	assert.Contains(t, clk.describe(), "batches of 8")
}

// The graph clock captures -n operations once and replays them: the
// library is called n times (plus the warm-up), the stream runs them on
// every launch, and a sample is a launch divided by n.
func TestGraphClockReplays(t *testing.T) {
	d, s := fakeGPU(t)
	const delay, ops, launches, warmup = 2 * time.Millisecond, 4, 3, 1
	cfg := config{iters: ops, warmup: warmup, graph: true, launches: launches, timeout: 10 * time.Second}
	clk, err := newClock(cfg, d, s)
	require.NoError(t, err)
	defer clk.Close()
	require.IsType(t, &graphClock{}, clk)
	lib := newFakeLib(d, s, delay)
	times, err := clk.times(lib, fakeCall(t, d, 16), 64)
	require.NoError(t, err)
	require.Len(t, times, launches)
	assert.Equal(t, launches, clk.samples())
	for i, d := range times {
		assert.GreaterOrEqual(t, d, delay, "launch %d", i)
		assert.Less(t, d, ops*delay, "launch %d must be divided by the graph's operations", i)
	}
	assert.EqualValues(t, warmup+ops, lib.launches.Load(), "captured once")
	assert.EqualValues(t, warmup+(1+launches)*ops, lib.ran.Load(), "an untimed first launch, then the timed ones")
	status, err := gpuDriver(d).StreamIsCapturing(cuda.Stream(s))
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureNone, status)
}

// A library failing inside the capture ends it: the error comes back and
// the stream is usable afterwards.
func TestGraphCaptureFailureLeavesStreamUsable(t *testing.T) {
	d, s := fakeGPU(t)
	cfg := config{iters: 3, graph: true, launches: 2, timeout: 10 * time.Second}
	clk, err := newClock(cfg, d, s)
	require.NoError(t, err)
	defer clk.Close()
	lib := newFakeLib(d, s, 0)
	lib.fail = gccl.Errorf(gccl.InvalidUsage, "op", "refused")
	c := fakeCall(t, d, 4)
	_, err = clk.times(lib, c, 16)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	assert.ErrorContains(t, err, "capturing a CUDA graph")
	assert.ErrorIs(t, clk.once(lib, c), gccl.ErrInvalidUsage)
	status, err := gpuDriver(d).StreamIsCapturing(cuda.Stream(s))
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureNone, status)
	lib.fail = nil
	require.NoError(t, clk.once(lib, c))
	assert.EqualValues(t, 1, lib.ran.Load())
}

// A stream that never finishes turns into a timeout, not a hang.
func TestEventTimerDeadline(t *testing.T) {
	d, s := fakeGPU(t)
	timer, err := newEventTimer(d, s, 50*time.Millisecond)
	require.NoError(t, err)
	defer timer.Close()
	lib := newFakeLib(d, s, 300*time.Millisecond)
	start := time.Now()
	_, err = timer.time(repeat(lib, fakeCall(t, d, 4), 1))
	assert.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Less(t, time.Since(start), 250*time.Millisecond)
	require.NoError(t, d.Synchronize(s))
	_, err = newEventTimer(d, s, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

// The host backend keeps host timing and refuses -graph; a library that
// only runs on the host cannot be timed on a GPU, and the other way round.
func TestClockKinds(t *testing.T) {
	host, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	clk, err := newClock(config{iters: 2}, host, 0)
	require.NoError(t, err)
	assert.Equal(t, hostClock{iters: 2}, clk)
	_, err = newClock(config{iters: 2, graph: true}, host, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidUsage)

	d, s := fakeGPU(t)
	gpuClk, err := newClock(config{iters: 2, timeout: time.Second}, d, s)
	require.NoError(t, err)
	defer gpuClk.Close()
	assert.ErrorIs(t, gpuClk.once(&mpiBaseline{}, call{}), gccl.ErrInvalidUsage)
	assert.ErrorIs(t, clk.once(newFakeLib(d, s, 0), call{}), gccl.ErrInvalidUsage)
}

// openFakeGPU opens GPU ordinal through drv (a cudafake).
func openFakeGPU(drv cuda.Driver, ordinal int, timeout time.Duration) (*device.CUDADevice, error) {
	d, err := devlink.OpenGPU(drv, ordinal, timeout)
	if err != nil {
		return nil, err
	}
	return d.(*device.CUDADevice), nil
}
