package clock

import (
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatchFor(t *testing.T) {
	for size, want := range map[int64]int{0: 32, 8: 32, 32 << 10: 32, 64 << 10: 16, 256 << 10: 4,
		1<<20 - 1: 2, 1 << 20: 1, 1 << 30: 1} {
		assert.Equal(t, want, BatchFor(0, size), "size %d", size)
	}
	assert.Equal(t, 5, BatchFor(5, 8))
	assert.Equal(t, 5, BatchFor(5, 1<<30))
}

// The eager clock puts a batch of operations between two events and
// divides: each sample is one operation's time, not the batch's.
func TestEventClockBatches(t *testing.T) {
	d, s := perftest.GPU(t)
	const delay, batch, iters, warmup = 2 * time.Millisecond, 8, 3, 2
	clk, err := New(Settings{Iters: iters, Warmup: warmup, Batch: batch, Timeout: 10 * time.Second}, d, s)
	require.NoError(t, err)
	defer clk.Close()
	require.IsType(t, &eventClock{}, clk)
	fake := perftest.NewLib("fake", d, s, delay)
	times, err := clk.Times(fake, perftest.Call(t, d, 16), 64)
	require.NoError(t, err)
	require.Len(t, times, iters)
	assert.Equal(t, iters, clk.Samples())
	for i, d := range times {
		assert.GreaterOrEqual(t, d, delay, "sample %d", i)
		assert.Less(t, d, batch*delay, "sample %d must be divided by the batch", i)
	}
	assert.EqualValues(t, warmup+iters*batch, fake.Launches.Load())
	assert.EqualValues(t, warmup+iters*batch, fake.Ran.Load(), "every launch ran before its sample ended")
	assert.Contains(t, clk.Describe(), "batches of 8")
}

// The graph clock captures -n operations once and replays them: the
// library is called n times (plus the warm-up), the stream runs them on
// every launch, and a sample is a launch divided by n.
func TestGraphClockReplays(t *testing.T) {
	d, s := perftest.GPU(t)
	const delay, ops, launches, warmup = 2 * time.Millisecond, 4, 3, 1
	clk, err := New(Settings{Iters: ops, Warmup: warmup, Graph: true, Launches: launches, Timeout: 10 * time.Second}, d, s)
	require.NoError(t, err)
	defer clk.Close()
	require.IsType(t, &graphClock{}, clk)
	fake := perftest.NewLib("fake", d, s, delay)
	times, err := clk.Times(fake, perftest.Call(t, d, 16), 64)
	require.NoError(t, err)
	require.Len(t, times, launches)
	assert.Equal(t, launches, clk.Samples())
	for i, d := range times {
		assert.GreaterOrEqual(t, d, delay, "launch %d", i)
		assert.Less(t, d, ops*delay, "launch %d must be divided by the graph's operations", i)
	}
	assert.EqualValues(t, warmup+ops, fake.Launches.Load(), "captured once")
	assert.EqualValues(t, warmup+(1+launches)*ops, fake.Ran.Load(), "an untimed first launch, then the timed ones")
	status, err := perftest.Driver(d).StreamIsCapturing(cuda.Stream(s))
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureNone, status)
}

// A library failing inside the capture ends it: the error comes back and
// the stream is usable afterwards.
func TestGraphCaptureFailureLeavesStreamUsable(t *testing.T) {
	d, s := perftest.GPU(t)
	clk, err := New(Settings{Iters: 3, Graph: true, Launches: 2, Timeout: 10 * time.Second}, d, s)
	require.NoError(t, err)
	defer clk.Close()
	fake := perftest.NewLib("fake", d, s, 0)
	fake.Fail = gccl.Errorf(gccl.InvalidUsage, "op", "refused")
	c := perftest.Call(t, d, 4)
	_, err = clk.Times(fake, c, 16)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	assert.ErrorContains(t, err, "capturing a CUDA graph")
	assert.ErrorIs(t, clk.Once(fake, c), gccl.ErrInvalidUsage)
	status, err := perftest.Driver(d).StreamIsCapturing(cuda.Stream(s))
	require.NoError(t, err)
	assert.Equal(t, cuda.CaptureNone, status)
	fake.Fail = nil
	require.NoError(t, clk.Once(fake, c))
	assert.EqualValues(t, 1, fake.Ran.Load())
}

// A stream that never finishes turns into a timeout, not a hang.
func TestEventTimerDeadline(t *testing.T) {
	d, s := perftest.GPU(t)
	timer, err := NewTimer(d, s, 50*time.Millisecond)
	require.NoError(t, err)
	defer timer.Close()
	fake := perftest.NewLib("fake", d, s, 300*time.Millisecond)
	start := time.Now()
	_, err = timer.Time(repeat(fake, perftest.Call(t, d, 4), 1))
	assert.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Less(t, time.Since(start), 250*time.Millisecond)
	require.NoError(t, d.Synchronize(s))
	_, err = NewTimer(d, s, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.NoError(t, (*Timer)(nil).Close())
}

// The host backend keeps host timing and refuses -graph; a library that
// only runs on the host cannot be timed on a GPU, and the other way round.
func TestClockKinds(t *testing.T) {
	host, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	clk, err := New(Settings{Iters: 2}, host, 0)
	require.NoError(t, err)
	assert.Equal(t, hostClock{iters: 2}, clk)
	_, err = New(Settings{Iters: 2, Graph: true}, host, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidUsage)

	d, s := perftest.GPU(t)
	gpuClk, err := New(Settings{Iters: 2, Timeout: time.Second}, d, s)
	require.NoError(t, err)
	defer gpuClk.Close()
	assert.ErrorIs(t, gpuClk.Once(hostOnly{}, lib.Call{}), gccl.ErrInvalidUsage)
	assert.ErrorIs(t, clk.Once(perftest.NewLib("fake", d, s, 0), lib.Call{}), gccl.ErrInvalidUsage)
}

// hostOnly is a library that runs on the host backend only (as MPI does).
type hostOnly struct{}

func (hostOnly) Name() string                                            { return "hostonly" }
func (hostOnly) Supports(perf.Op, gccl.DataType, gccl.RedOp, bool) error { return nil }
func (hostOnly) Run(lib.Call) (time.Duration, error)                     { return 0, nil }
