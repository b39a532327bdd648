package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/internal/perf"
)

// initStats is one library's init cost over the ranks: the slowest rank's
// time and the median, and the largest per-rank memory figures (-1: not
// measured).
type initStats struct {
	name       string
	maxTime    time.Duration
	medianTime time.Duration
	memInit    int64
	memFirst   int64
}

// initSummary is the run's init costs: gccl's and, when the baseline
// measured its own, the baseline's (nil otherwise).
type initSummary struct {
	gccl initStats
	base *initStats
}

// initWords is the int64s each rank contributes: a failure flag, then
// time, memory at init and after the first ops of gccl and of the
// baseline (baseline time -1: no baseline figures).
const initWords = 7

// agreeInit all-gathers every rank's init costs (base.took < 0: the
// baseline has none) and combines them; every rank gets the same summary.
// A rank that failed (failed true) makes every rank return an error.
func agreeInit(x exchange.Exchanger, gccl, base initCost, baseName string, failed bool) (initSummary, error) {
	words := []int64{0, int64(gccl.took), gccl.memInit, gccl.memFirst, int64(base.took), base.memInit, base.memFirst}
	if failed {
		words[0] = 1
	}
	msg := make([]byte, 0, 8*initWords)
	for _, w := range words {
		msg = binary.LittleEndian.AppendUint64(msg, uint64(w))
	}
	all, err := x.Allgather(msg)
	if err != nil {
		return initSummary{}, fmt.Errorf("agreeing on the init costs: %w", err)
	}
	if len(all) == 0 || len(all)%len(msg) != 0 {
		return initSummary{}, fmt.Errorf("exchange: %d bytes is not a whole number of %d-byte init reports", len(all), len(msg))
	}
	var g, b []initCost
	for r := 0; r < len(all)/len(msg); r++ {
		v := make([]int64, initWords)
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(all[r*len(msg)+8*i:]))
		}
		if v[0] != 0 {
			return initSummary{}, fmt.Errorf("rank %d failed measuring the init (see its error output)", r)
		}
		g = append(g, initCost{took: time.Duration(v[1]), memInit: v[2], memFirst: v[3]})
		if v[4] >= 0 {
			b = append(b, initCost{took: time.Duration(v[4]), memInit: v[5], memFirst: v[6]})
		}
	}
	sum := initSummary{gccl: combineInit("gccl", g)}
	if len(b) == len(g) {
		s := combineInit(baseName, b)
		sum.base = &s
	}
	return sum, nil
}

// combineInit is the slowest and median time and the largest memory
// figures of the ranks' costs; a memory figure is -1 when any rank did
// not measure it.
func combineInit(name string, costs []initCost) initStats {
	s := initStats{name: name}
	times := make([]time.Duration, len(costs))
	for i, c := range costs {
		times[i] = c.took
		s.maxTime = max(s.maxTime, c.took)
		if i == 0 {
			s.memInit, s.memFirst = c.memInit, c.memFirst
		}
		s.memInit = maxMeasured(s.memInit, c.memInit)
		s.memFirst = maxMeasured(s.memFirst, c.memFirst)
	}
	s.medianTime = perf.Median(times)
	return s
}

// maxMeasured is the larger of two memory figures, -1 if either is -1.
func maxMeasured(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return max(a, b)
}

// writeInit prints the init line of the header:
//
//	# init: gccl 123.4 ms (median 120.1 ms), 24.0 MiB device memory (after first op 24.0 MiB) | nccl 456.7 ms (median 450.2 ms), 612.0 MiB device memory (after first op 700.0 MiB) | ratio t 0.27 mem 0.04 (after first op 0.03)
//
// or, on the host backend, "# init: gccl 12.3 ms (median 11.9 ms), device memory N/A (host backend)".
func writeInit(w io.Writer, s initSummary) {
	parts := []string{s.gccl.String()}
	if b := s.base; b != nil {
		parts = append(parts, b.String(), fmt.Sprintf("ratio t %s mem %s (after first op %s)",
			fmtRatio(perf.Ratio(float64(s.gccl.maxTime), float64(b.maxTime))),
			fmtRatio(memRatio(s.gccl.memInit, b.memInit)), fmtRatio(memRatio(s.gccl.memFirst, b.memFirst))))
	}
	fmt.Fprintf(w, "# init: %s\n", strings.Join(parts, " | "))
}

func (s initStats) String() string {
	t := fmt.Sprintf("%s %s ms (median %s ms)", s.name, fmtMS(s.maxTime), fmtMS(s.medianTime))
	if s.memInit < 0 {
		return t + ", device memory N/A (host backend)"
	}
	return fmt.Sprintf("%s, %s device memory (after first op %s)", t, fmtMiB(s.memInit), fmtMiB(s.memFirst))
}

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func fmtMiB(b int64) string {
	if b < 0 {
		return "N/A"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// memRatio is a/b for memory figures, NaN unless both are measured and b
// is positive.
func memRatio(a, b int64) float64 {
	if a < 0 || b <= 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// jsonInit is the -json output's "init" object; times in milliseconds,
// memory in bytes (null: not measured).
type jsonInit struct {
	Gccl     jsonInitLib  `json:"gccl"`
	Baseline *jsonInitLib `json:"baseline,omitempty"`
}

type jsonInitLib struct {
	Library  string  `json:"library"`
	TimeMS   float64 `json:"time_ms"`        // the slowest rank's
	MedianMS float64 `json:"median_time_ms"` // over ranks
	MemInit  *int64  `json:"mem_init_bytes"`
	MemFirst *int64  `json:"mem_after_first_op_bytes"`
}

func (s initSummary) json() *jsonInit {
	j := &jsonInit{Gccl: s.gccl.json()}
	if s.base != nil {
		b := s.base.json()
		j.Baseline = &b
	}
	return j
}

func (s initStats) json() jsonInitLib {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	bytes := func(b int64) *int64 {
		if b < 0 {
			return nil
		}
		return &b
	}
	return jsonInitLib{Library: s.name, TimeMS: ms(s.maxTime), MedianMS: ms(s.medianTime),
		MemInit: bytes(s.memInit), MemFirst: bytes(s.memFirst)}
}
