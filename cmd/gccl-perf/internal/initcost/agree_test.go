package initcost

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agreeAll runs Agree on n goroutine ranks with the given costs.
func agreeAll(t *testing.T, g, b []Cost, failed int) ([]Summary, []error) {
	n := len(g)
	x := exchange.NewLocal(n, 5*time.Second)
	sums, errs := make([]Summary, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { sums[r], errs[r] = Agree(x.Rank(r), g[r], b[r], "nccl", r == failed) })
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
	g, b := make([]Cost, n), make([]Cost, n)
	random := func() Cost {
		return Cost{Took: time.Duration(1 + rng.Int64N(int64(time.Second))), MemInit: rng.Int64N(1 << 32), MemFirst: rng.Int64N(1 << 32)}
	}
	for r := range n {
		g[r], b[r] = random(), random()
	}
	sums, errs := agreeAll(t, g, b, -1)
	want := func(name string, cs []Cost) Stats {
		s := Stats{Name: name, MemInit: -1, MemFirst: -1}
		var times []time.Duration
		for _, c := range cs {
			times = append(times, c.Took)
			s.MaxTime, s.MemInit, s.MemFirst = max(s.MaxTime, c.Took), max(s.MemInit, c.MemInit), max(s.MemFirst, c.MemFirst)
		}
		slices.Sort(times)
		s.MedianTime = perf.Median(times)
		return s
	}
	for r := range n {
		require.NoError(t, errs[r])
		assert.Equal(t, want("gccl", g), sums[r].Gccl, "rank %d", r)
		require.NotNil(t, sums[r].Base)
		assert.Equal(t, want("nccl", b), *sums[r].Base, "rank %d", r)
		assert.GreaterOrEqual(t, sums[r].Gccl.MaxTime, sums[r].Gccl.MedianTime)
	}

	// No baseline figures (took -1), one rank without memory figures.
	k := rng.IntN(n)
	for r := range n {
		b[r] = Cost{Took: -1, MemInit: -1, MemFirst: -1}
	}
	g[k].MemFirst = -1
	sums, errs = agreeAll(t, g, b, -1)
	for r := range n {
		require.NoError(t, errs[r])
		assert.Nil(t, sums[r].Base)
		assert.Equal(t, int64(-1), sums[r].Gccl.MemFirst)
		assert.Positive(t, sums[r].Gccl.MemInit)
	}

	_, errs = agreeAll(t, g, b, k)
	for r := range n {
		assert.ErrorContains(t, errs[r], fmt.Sprintf("rank %d failed measuring the init", k))
	}
}
