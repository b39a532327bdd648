package report

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var gpuInitLine = regexp.MustCompile(`^# init: gccl ([0-9.]+) ms \(median ([0-9.]+) ms\), ([0-9.]+) MiB device memory \(after first op ([0-9.]+) MiB\)` +
	` \| nccl ([0-9.]+) ms \(median ([0-9.]+) ms\), ([0-9.]+) MiB device memory \(after first op ([0-9.]+) MiB\)` +
	` \| ratio t ([0-9.]+) mem ([0-9.]+) \(after first op ([0-9.]+)\)\n$`)

// The init line with a baseline: every figure is printed, in ms and MiB,
// and the ratios are gccl/baseline of the slowest time and largest memory.
func TestWriteInitLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, uint64(time.Now().UnixNano())))
	stats := func(name string) initcost.Stats {
		med := time.Duration(1e6 + rng.Int64N(1e9))
		mem := 1<<20 + rng.Int64N(1<<32)
		return initcost.Stats{Name: name, MedianTime: med, MaxTime: med + time.Duration(rng.Int64N(1e8)), MemInit: mem, MemFirst: mem + rng.Int64N(1<<30)}
	}
	g, b := stats("gccl"), stats("nccl")
	var out bytes.Buffer
	WriteInit(&out, initcost.Summary{Gccl: g, Base: &b})
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
	for i, want := range []float64{ms(g.MaxTime), ms(g.MedianTime), mib(g.MemInit), mib(g.MemFirst),
		ms(b.MaxTime), ms(b.MedianTime), mib(b.MemInit), mib(b.MemFirst)} {
		assert.InDelta(t, want, f[1+i], 0.051, "figure %d of %q", i, out.String())
	}
	assert.InDelta(t, float64(g.MaxTime)/float64(b.MaxTime), f[9], 0.0005)
	assert.InDelta(t, float64(g.MemInit)/float64(b.MemInit), f[10], 0.0005)
	assert.InDelta(t, float64(g.MemFirst)/float64(b.MemFirst), f[11], 0.0005)

	// Not measured after the first op, and a baseline that took no memory.
	g.MemFirst, b.MemInit = -1, 0
	out.Reset()
	WriteInit(&out, initcost.Summary{Gccl: g, Base: &b})
	assert.Contains(t, out.String(), "device memory (after first op N/A) | nccl")
	assert.Contains(t, out.String(), " 0.0 MiB device memory")
	assert.Regexp(t, `ratio t [0-9.]+ mem n/a \(after first op n/a\)\n$`, out.String())

	// The host backend.
	out.Reset()
	WriteInit(&out, initcost.Summary{Gccl: initcost.Stats{Name: "gccl", MaxTime: 12340 * time.Microsecond, MedianTime: 11 * time.Millisecond, MemInit: -1, MemFirst: -1}})
	assert.Equal(t, "# init: gccl 12.3 ms (median 11.0 ms), device memory N/A (host backend)\n", out.String())
}
