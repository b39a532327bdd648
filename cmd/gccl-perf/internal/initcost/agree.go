package initcost

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/internal/perf"
)

// Stats is one library's init cost over the ranks: the slowest rank's
// time and the median, and the largest per-rank memory figures (-1: not
// measured).
type Stats struct {
	Name       string
	MaxTime    time.Duration
	MedianTime time.Duration
	MemInit    int64
	MemFirst   int64
}

// Summary is the run's init costs: gccl's and, when the baseline
// measured its own, the baseline's (nil otherwise).
type Summary struct {
	Gccl Stats
	Base *Stats
}

// initWords is the int64s each rank contributes: a failure flag, then
// time, memory at init and after the first ops of gccl and of the
// baseline (baseline time -1: no baseline figures).
const initWords = 7

// Agree all-gathers every rank's init costs (base.took < 0: the
// baseline has none) and combines them; every rank gets the same summary.
// A rank that failed (failed true) makes every rank return an error.
func Agree(x exchange.Exchanger, gccl, base Cost, baseName string, failed bool) (Summary, error) {
	words := []int64{0, int64(gccl.Took), gccl.MemInit, gccl.MemFirst, int64(base.Took), base.MemInit, base.MemFirst}
	if failed {
		words[0] = 1
	}
	msg := make([]byte, 0, 8*initWords)
	for _, w := range words {
		msg = binary.LittleEndian.AppendUint64(msg, uint64(w))
	}
	all, err := x.Allgather(msg)
	if err != nil {
		return Summary{}, fmt.Errorf("agreeing on the init costs: %w", err)
	}
	if len(all) == 0 || len(all)%len(msg) != 0 {
		return Summary{}, fmt.Errorf("exchange: %d bytes is not a whole number of %d-byte init reports", len(all), len(msg))
	}
	var g, b []Cost
	for r := 0; r < len(all)/len(msg); r++ {
		v := make([]int64, initWords)
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(all[r*len(msg)+8*i:]))
		}
		if v[0] != 0 {
			return Summary{}, fmt.Errorf("rank %d failed measuring the init (see its error output)", r)
		}
		g = append(g, Cost{Took: time.Duration(v[1]), MemInit: v[2], MemFirst: v[3]})
		if v[4] >= 0 {
			b = append(b, Cost{Took: time.Duration(v[4]), MemInit: v[5], MemFirst: v[6]})
		}
	}
	sum := Summary{Gccl: combine("gccl", g)}
	if len(b) == len(g) {
		s := combine(baseName, b)
		sum.Base = &s
	}
	return sum, nil
}

// combine is the slowest and median time and the largest memory
// figures of the ranks' costs; a memory figure is -1 when any rank did
// not measure it.
func combine(name string, costs []Cost) Stats {
	s := Stats{Name: name}
	times := make([]time.Duration, len(costs))
	for i, c := range costs {
		times[i] = c.Took
		s.MaxTime = max(s.MaxTime, c.Took)
		if i == 0 {
			s.MemInit, s.MemFirst = c.MemInit, c.MemFirst
		}
		s.MemInit = maxMeasured(s.MemInit, c.MemInit)
		s.MemFirst = maxMeasured(s.MemFirst, c.MemFirst)
	}
	s.MedianTime = perf.Median(times)
	return s
}

// maxMeasured is the larger of two memory figures, -1 if either is -1.
func maxMeasured(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return max(a, b)
}
