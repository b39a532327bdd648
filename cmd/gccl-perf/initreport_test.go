package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agreeAll runs agreeInit on n goroutine ranks with the given costs.
func agreeAll(t *testing.T, g, b []initCost, failed int) ([]initSummary, []error) {
	n := len(g)
	x := exchange.NewLocal(n, 5*time.Second)
	sums, errs := make([]initSummary, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { sums[r], errs[r] = agreeInit(x.Rank(r), g[r], b[r], "nccl", r == failed) })
	}
	wg.Wait()
	return sums, errs
}

// Every rank gets the slowest and the median time and the largest memory
// figures, the same on every rank; a rank without memory figures makes
// them N/A; a failed rank fails every rank.
func TestAgreeInit(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, uint64(time.Now().UnixNano())))
	n := 2 + rng.IntN(6)
	g, b := make([]initCost, n), make([]initCost, n)
	random := func() initCost {
		return initCost{took: time.Duration(1 + rng.Int64N(int64(time.Second))), memInit: rng.Int64N(1 << 32), memFirst: rng.Int64N(1 << 32)}
	}
	for r := range n {
		g[r], b[r] = random(), random()
	}
	sums, errs := agreeAll(t, g, b, -1)
	want := func(name string, cs []initCost) initStats {
		s := initStats{name: name, memInit: -1, memFirst: -1}
		var times []time.Duration
		for _, c := range cs {
			times = append(times, c.took)
			s.maxTime, s.memInit, s.memFirst = max(s.maxTime, c.took), max(s.memInit, c.memInit), max(s.memFirst, c.memFirst)
		}
		slices.Sort(times)
		s.medianTime = perf.Median(times)
		return s
	}
	for r := range n {
		require.NoError(t, errs[r])
		assert.Equal(t, want("gccl", g), sums[r].gccl, "rank %d", r)
		require.NotNil(t, sums[r].base)
		assert.Equal(t, want("nccl", b), *sums[r].base, "rank %d", r)
		assert.GreaterOrEqual(t, sums[r].gccl.maxTime, sums[r].gccl.medianTime)
	}

	// No baseline figures (took -1), one rank without memory figures.
	k := rng.IntN(n)
	for r := range n {
		b[r] = initCost{took: -1, memInit: -1, memFirst: -1}
	}
	g[k].memFirst = -1
	sums, errs = agreeAll(t, g, b, -1)
	for r := range n {
		require.NoError(t, errs[r])
		assert.Nil(t, sums[r].base)
		assert.Equal(t, int64(-1), sums[r].gccl.memFirst)
		assert.Positive(t, sums[r].gccl.memInit)
	}

	_, errs = agreeAll(t, g, b, k)
	for r := range n {
		assert.ErrorContains(t, errs[r], fmt.Sprintf("rank %d failed measuring the init", k))
	}
}

var gpuInitLine = regexp.MustCompile(`^# init: gccl ([0-9.]+) ms \(median ([0-9.]+) ms\), ([0-9.]+) MiB device memory \(after first op ([0-9.]+) MiB\)` +
	` \| nccl ([0-9.]+) ms \(median ([0-9.]+) ms\), ([0-9.]+) MiB device memory \(after first op ([0-9.]+) MiB\)` +
	` \| ratio t ([0-9.]+) mem ([0-9.]+) \(after first op ([0-9.]+)\)\n$`)

// The init line with a baseline: every figure is printed, in ms and MiB,
// and the ratios are gccl/baseline of the slowest time and largest memory.
func TestWriteInitLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, uint64(time.Now().UnixNano())))
	stats := func(name string) initStats {
		med := time.Duration(1e6 + rng.Int64N(1e9))
		mem := 1<<20 + rng.Int64N(1<<32)
		return initStats{name: name, medianTime: med, maxTime: med + time.Duration(rng.Int64N(1e8)), memInit: mem, memFirst: mem + rng.Int64N(1<<30)}
	}
	g, b := stats("gccl"), stats("nccl")
	var out bytes.Buffer
	writeInit(&out, initSummary{gccl: g, base: &b})
	m := gpuInitLine.FindStringSubmatch(out.String())
	require.NotNil(t, m, "%q", out.String())
	f := make([]float64, len(m))
	for i := 1; i < len(m); i++ {
		var err error
		f[i], err = strconv.ParseFloat(m[i], 64)
		require.NoError(t, err, m[i])
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	for i, want := range []float64{ms(g.maxTime), ms(g.medianTime), mib(g.memInit), mib(g.memFirst),
		ms(b.maxTime), ms(b.medianTime), mib(b.memInit), mib(b.memFirst)} {
		assert.InDelta(t, want, f[1+i], 0.051, "figure %d of %q", i, out.String())
	}
	assert.InDelta(t, float64(g.maxTime)/float64(b.maxTime), f[9], 0.0005)
	assert.InDelta(t, float64(g.memInit)/float64(b.memInit), f[10], 0.0005)
	assert.InDelta(t, float64(g.memFirst)/float64(b.memFirst), f[11], 0.0005)

	// Not measured after the first op, and a baseline that took no memory.
	g.memFirst, b.memInit = -1, 0
	out.Reset()
	writeInit(&out, initSummary{gccl: g, base: &b})
	assert.Contains(t, out.String(), "device memory (after first op N/A) | nccl")
	assert.Contains(t, out.String(), " 0.0 MiB device memory")
	assert.Regexp(t, `ratio t [0-9.]+ mem n/a \(after first op n/a\)\n$`, out.String())

	// The host backend.
	out.Reset()
	writeInit(&out, initSummary{gccl: initStats{name: "gccl", maxTime: 12340 * time.Microsecond, medianTime: 11 * time.Millisecond, memInit: -1, memFirst: -1}})
	assert.Equal(t, "# init: gccl 12.3 ms (median 11.0 ms), device memory N/A (host backend)\n", out.String())
}
