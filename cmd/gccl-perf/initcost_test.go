package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/check"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostInitLine is the init line of a host-backend run.
var hostInitLine = regexp.MustCompile(`^# init: gccl ([0-9.]+) ms \(median ([0-9.]+) ms\), device memory N/A \(host backend\)$`)

// The host backend with goroutine ranks: the init line is the first line,
// its times parse, are positive, median <= max <= the run's wall time;
// the JSON has the same figures and no memory.
func TestInitLineHostRanks(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	cfg := mustParse(t, "-np", "4", "-op", "broadcast", "-b", "64", "-e", "256", "-n", "1", "-w", "0",
		"-timeout", "30s", "-json", jsonPath)
	var out, errs bytes.Buffer
	start := time.Now()
	require.Equal(t, exitOK, run(cfg, &out, &errs, hooks{check: check.CountWrong}), "stderr: %s", errs.String())
	wall := time.Since(start)
	first := strings.SplitN(out.String(), "\n", 2)[0]
	m := hostInitLine.FindStringSubmatch(first)
	require.NotNil(t, m, "first line %q", first)
	maxMS, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	medMS, err := strconv.ParseFloat(m[2], 64)
	require.NoError(t, err)
	assert.Positive(t, medMS)
	assert.LessOrEqual(t, medMS, maxMS)
	assert.Less(t, maxMS, float64(wall.Milliseconds())+1)
	assert.Equal(t, 1, strings.Count(out.String(), "# init:"), "one init line per run")

	var js struct {
		Init *jsonInit `json:"init"`
		Rows []jsonRow `json:"rows"`
	}
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	require.NotNil(t, js.Init)
	assert.Equal(t, "gccl", js.Init.Gccl.Library)
	assert.InDelta(t, maxMS, js.Init.Gccl.TimeMS, 0.051)
	assert.InDelta(t, medMS, js.Init.Gccl.MedianMS, 0.051)
	assert.Nil(t, js.Init.Gccl.MemInit)
	assert.Nil(t, js.Init.Gccl.MemFirst)
	assert.Nil(t, js.Init.Baseline)
	assert.Len(t, js.Rows, 3)
}

// fakeMeter is a meter on a fresh fake GPU with memBytes of memory.
func fakeMeter(t *testing.T, memBytes int) (*memMeter, *cudafake.Fake) {
	f := cudafake.New(cudafake.Config{MemBytes: memBytes})
	return meterOf(perftest.OpenGPU(t, f)), f
}

// timeInit on the fake GPU: the memory figure is exactly what the init
// allocated (cuMemAlloc and cuMemCreate), whatever was allocated before;
// the time includes asynchronous work the init left on a stream.
func TestTimeInitOnFakeGPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, uint64(time.Now().UnixNano())))
	m, f := fakeMeter(t, 256<<20)
	_, err := m.dev.Alloc(1 + rng.IntN(1<<20)) // before the init: not counted
	require.NoError(t, err)
	g, err := f.MemGetAllocationGranularity(0, cuda.HandlePosixFD, false)
	require.NoError(t, err)
	n, k := 1+rng.IntN(8<<20), 1+rng.IntN(4)
	const lag = 30 * time.Millisecond
	var handle cuda.MemHandle
	cost, err := timeInit(m, func() error {
		return m.dev.Do(func() (err error) {
			if _, err = f.MemAlloc(n); err != nil {
				return err
			}
			if handle, err = f.MemCreate(k*g, 0, cuda.HandlePosixFD); err != nil {
				return err
			}
			s, err := f.StreamCreate(cuda.StreamNonBlocking)
			if err != nil {
				return err
			}
			return f.LaunchHostFunc(s, func() { time.Sleep(lag) })
		})
	})
	require.NoError(t, err)
	assert.EqualValues(t, n+k*g, cost.memInit, "n %d, %d x %d", n, k, g)
	assert.EqualValues(t, -1, cost.memFirst)
	assert.GreaterOrEqual(t, cost.took, lag, "the init's asynchronous work is waited for")

	// Freeing in the init shows as a smaller (even negative) figure.
	cost, err = timeInit(m, func() error { return m.dev.Do(func() error { return f.MemRelease(handle) }) })
	require.NoError(t, err)
	assert.EqualValues(t, -k*g, cost.memInit)

	// On the host nothing is measured but the time.
	cost, err = timeInit(nil, func() error { time.Sleep(lag); return nil })
	require.NoError(t, err)
	assert.Equal(t, int64(-1), cost.memInit)
	assert.GreaterOrEqual(t, cost.took, lag)
	_, err = timeInit(nil, func() error { return os.ErrDeadlineExceeded })
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

// lazyLib is a fakeLib that allocates lazy bytes of device memory on its
// first launch and keeps them, as NCCL connects its buffers lazily.
type lazyLib struct {
	*perftest.Lib
	lazy int
	once sync.Once
	kept uintptr
}

func (l *lazyLib) Launch(c lib.Call) (err error) {
	l.once.Do(func() { l.kept, err = perftest.Driver(l.Dev).MemAlloc(l.lazy) })
	if err != nil {
		return err
	}
	return l.Lib.Launch(c)
}

// The first operations' memory is each library's own: the lazy
// allocation, on top of the init's figure; the sweep memory they run on is
// not counted and is freed again.
func TestFirstOpsOnFakeGPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, uint64(time.Now().UnixNano())))
	for _, mode := range []string{"-graph=false", "-graph=true"} {
		fake, base := fakePair(t, 0)
		g, b := &lazyLib{Lib: fake, lazy: 1 + rng.IntN(4<<20)}, &lazyLib{Lib: base, lazy: 1 + rng.IntN(4<<20)}
		r, _ := fakeRanker(t, []string{"-op", "broadcast", "-b", "1K", "-e", "1M", "-n", "1", "-w", "0", mode}, fake, nil)
		r.gccl, r.base = g, b
		m := meterOf(r.dev)
		free0, err := m.free()
		require.NoError(t, err)
		costs := []initCost{{took: time.Millisecond, memInit: rng.Int64N(1 << 30), memFirst: -1},
			{took: time.Millisecond, memInit: rng.Int64N(1 << 30), memFirst: -1}}
		init := []int64{costs[0].memInit, costs[1].memInit}
		require.NoError(t, r.measureFirstOps([]lib.Library{g, b}, costs))
		assert.Equal(t, init[0]+int64(g.lazy), costs[0].memFirst, mode)
		assert.Equal(t, init[1]+int64(b.lazy), costs[1].memFirst, mode)
		assert.Equal(t, init, []int64{costs[0].memInit, costs[1].memInit}, "the init figures stay")
		assert.EqualValues(t, 2, fake.Ran.Load(), "%s: smallest and largest size", mode)
		assert.EqualValues(t, 2, base.Ran.Load(), mode)
		free1, err := m.free()
		require.NoError(t, err)
		assert.Equal(t, free0-int64(g.lazy+b.lazy), free1, "only the lazy memory is left")
	}
}

// A library whose first operation fails fails the measurement.
func TestFirstOpsFailure(t *testing.T) {
	fake, _ := fakePair(t, 0)
	fake.Fail = os.ErrClosed
	r, _ := fakeRanker(t, []string{"-op", "broadcast", "-b", "64", "-e", "64"}, fake, nil)
	costs := []initCost{{memInit: 0, memFirst: -1}}
	assert.ErrorIs(t, r.measureFirstOps([]lib.Library{fake}, costs), os.ErrClosed)
}

// firstOp skips the operations that cannot run and takes the smallest and
// largest sizes of the first that can.
func TestFirstOpChoice(t *testing.T) {
	fake, _ := fakePair(t, 0)
	r, _ := fakeRanker(t, []string{"-op", "all", "-b", "64", "-e", "4K", "-f", "4", "-r", "3", "-inplace"}, fake, nil)
	r.nranks = 2 // root 3 is not a rank: broadcast and reduce are skipped, as the in-place sendrecv and alltoall
	r.cfg.ops = []perf.Op{perf.Broadcast, perf.SendRecv, perf.Reduce, perf.AllToAll, perf.AllGather}
	op, sizes, ok := r.firstOp()
	require.True(t, ok)
	assert.Equal(t, perf.AllGather, op)
	assert.Equal(t, []int64{64, 4096}, sizes)
	r.cfg.ops = []perf.Op{perf.Broadcast, perf.SendRecv}
	_, _, ok = r.firstOp()
	assert.False(t, ok)
}
