package perf

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBandsContain(t *testing.T) {
	in := map[int64]int{0: 0, 8: 0, 64 << 10: 0, 256 << 10: 1, 1 << 20: 1, 16 << 20: 1, 128 << 20: 2, 1 << 30: 2}
	for size, band := range in {
		for i, b := range Bands {
			assert.Equal(t, i == band, b.Contains(size), "size %d band %s", size, b.Name)
		}
	}
	for _, gap := range []int64{64<<10 + 1, 128 << 10, 16<<20 + 1, 64 << 20} {
		for _, b := range Bands {
			assert.False(t, b.Contains(gap), "size %d is between bands, not in %s", gap, b.Name)
		}
	}
}

// Random rows with random times: the banded ratios must be the geometric
// means computed the long way (n-th root of the product), sizes between
// bands and rows without a baseline must not count, and the peaks must be
// the largest bus bandwidths.
func TestSummarize(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for range 20 {
		var rows []Row
		prod := []float64{1, 1, 1}
		n := []int{0, 0, 0}
		var peak, basePeak float64
		for size := int64(8); size <= 1<<30; size *= 2 {
			g := time.Duration(1 + rng.IntN(1e6))
			row := Row{Size: size, Gccl: Measure{Time: g, BusBW: rng.Float64() * 400}}
			peak = math.Max(peak, row.Gccl.BusBW)
			if rng.IntN(4) > 0 {
				b := time.Duration(1 + rng.IntN(1e6))
				row.Base = &Measure{Time: b, BusBW: rng.Float64() * 400}
				basePeak = math.Max(basePeak, row.Base.BusBW)
				for i, band := range Bands {
					if band.Contains(size) {
						prod[i] *= float64(g) / float64(b)
						n[i]++
					}
				}
			}
			rows = append(rows, row)
		}
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		s := Summarize(AllReduce, rows)
		for i := range Bands {
			require.Equal(t, n[i], s.N[i], "band %d", i)
			if n[i] == 0 {
				assert.True(t, math.IsNaN(s.Ratio[i]))
				continue
			}
			assert.InEpsilon(t, math.Pow(prod[i], 1/float64(n[i])), s.Ratio[i], 1e-9, "band %d", i)
		}
		assert.Equal(t, peak, s.MaxBus)
		assert.Equal(t, basePeak, s.BaseBus)
		for _, r := range rows {
			if r.Gccl.BusBW == peak {
				assert.Equal(t, r.Size, s.MaxBusAt)
			}
		}
	}
}

func TestSummarizeSkipsEmptyTimes(t *testing.T) {
	rows := []Row{
		{Size: 8, Gccl: Measure{Time: 0}, Base: &Measure{Time: 10}},
		{Size: 16, Gccl: Measure{Time: 30}, Base: &Measure{Time: 0}},
		{Size: 32, Gccl: Measure{Time: 20}, Base: &Measure{Time: 10}},
		{Size: 1 << 20, Gccl: Measure{Time: 10}},
	}
	s := Summarize(Broadcast, rows)
	assert.Equal(t, []int{1, 0, 0}, s.N)
	assert.InEpsilon(t, 2.0, s.Ratio[0], 1e-12)
	assert.True(t, math.IsNaN(s.Ratio[1]) && math.IsNaN(s.Ratio[2]))
	assert.Zero(t, s.BaseBus)
}

func TestWriteSummary(t *testing.T) {
	ar := Summary{Op: AllReduce, Ratio: []float64{1.25, math.NaN(), 0.5}, N: []int{14, 0, 4},
		MaxBus: 353.25, MaxBusAt: 1 << 30, BaseBus: 360, BaseBusAt: 512 << 20}
	var b bytes.Buffer
	WriteSummary(&b, "nccl", []Summary{ar})
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Contains(t, lines[0], "gccl/nccl")
	for _, h := range []string{"<=64K", "256K-16M", ">=128M", "gccl busbw", "nccl busbw"} {
		assert.Contains(t, lines[1], h)
	}
	assert.Equal(t, []string{"allreduce", "1.250", "(14)", "n/a", "0.500", "(4)", "353.2", "@1G", "360.0", "@512M"},
		strings.Fields(lines[2]))
}
