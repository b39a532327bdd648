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
	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/device"
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

	var js runJSON
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

// lazyLib is a perftest.Lib that allocates lazy bytes of device memory on its
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
		free0 := freeBytes(t, fake.Dev)
		costs := []initcost.Cost{{Took: time.Millisecond, MemInit: rng.Int64N(1 << 30), MemFirst: -1},
			{Took: time.Millisecond, MemInit: rng.Int64N(1 << 30), MemFirst: -1}}
		init := []int64{costs[0].MemInit, costs[1].MemInit}
		require.NoError(t, r.measureFirstOps([]lib.Library{g, b}, costs))
		assert.Equal(t, init[0]+int64(g.lazy), costs[0].MemFirst, mode)
		assert.Equal(t, init[1]+int64(b.lazy), costs[1].MemFirst, mode)
		assert.Equal(t, init, []int64{costs[0].MemInit, costs[1].MemInit}, "the init figures stay")
		assert.EqualValues(t, 2, fake.Ran.Load(), "%s: smallest and largest size", mode)
		assert.EqualValues(t, 2, base.Ran.Load(), mode)
		free1 := freeBytes(t, fake.Dev)
		assert.Equal(t, free0-int64(g.lazy+b.lazy), free1, "only the lazy memory is left")
	}
}

// A library whose first operation fails fails the measurement.
func TestFirstOpsFailure(t *testing.T) {
	fake, _ := fakePair(t, 0)
	fake.Fail = os.ErrClosed
	r, _ := fakeRanker(t, []string{"-op", "broadcast", "-b", "64", "-e", "64"}, fake, nil)
	costs := []initcost.Cost{{MemInit: 0, MemFirst: -1}}
	assert.ErrorIs(t, r.measureFirstOps([]lib.Library{fake}, costs), os.ErrClosed)
}

// firstOp skips the operations that cannot run and takes the smallest and
// largest sizes of the first that can.
func TestFirstOpChoice(t *testing.T) {
	fake, _ := fakePair(t, 0)
	r, _ := fakeRanker(t, []string{"-op", "all", "-b", "64", "-e", "4K", "-f", "4", "-r", "3", "-inplace"}, fake, nil)
	r.nranks = 2 // root 3 is not a rank: broadcast and reduce are skipped, as the in-place sendrecv and alltoall
	r.cfg.ops = []perf.Op{perf.Broadcast, perf.SendRecv, perf.Reduce, perf.AllToAll, perf.AllGather}
	spec, sizes, ok := r.firstOp()
	require.True(t, ok)
	assert.Equal(t, perf.AllGather, spec.Op)
	assert.Equal(t, []int64{64, 4096}, sizes)
	r.cfg.ops = []perf.Op{perf.Broadcast, perf.SendRecv, perf.Halo}
	_, _, ok = r.firstOp()
	assert.False(t, ok, "halo has no in-place form either")
	r.cfg.inplace, r.cfg.halo = false, []int{3}
	r.cfg.ops = []perf.Op{perf.Halo, perf.SendRecv}
	spec, _, ok = r.firstOp()
	require.True(t, ok)
	assert.Equal(t, perf.SendRecv, spec.Op, "a -halo grid that does not hold the ranks is skipped")
}

// freeBytes is d's free memory, as cuMemGetInfo reads it.
func freeBytes(t *testing.T, d *device.CUDADevice) int64 {
	var free int
	require.NoError(t, d.Do(func() (err error) {
		free, _, err = perftest.Driver(d).MemGetInfo()
		return err
	}))
	return int64(free)
}
