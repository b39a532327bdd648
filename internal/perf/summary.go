package perf

import (
	"fmt"
	"io"
	"math"
)

// Band is a range of message sizes, in bytes, inclusive at both ends.
type Band struct {
	Name   string
	Lo, Hi int64
}

// Contains reports whether size bytes fall in the band.
func (b Band) Contains(size int64) bool { return size >= b.Lo && size <= b.Hi }

// Bands are the size bands in which gccl's performance goals against NCCL
// are stated: latency-bound (up to 64 KiB), medium (256 KiB to 16 MiB) and
// bandwidth-bound (128 MiB and more). Sizes between bands count in none.
var Bands = []Band{
	{Name: "<=64K", Lo: 0, Hi: 64 << 10},
	{Name: "256K-16M", Lo: 256 << 10, Hi: 16 << 20},
	{Name: ">=128M", Lo: 128 << 20, Hi: math.MaxInt64},
}

// Summary is one operation's comparison with a baseline: per band of
// Bands, the geometric mean of the time ratio gccl/baseline over the sizes
// in it (NaN when none was measured by both) and how many sizes it
// covers; and the highest bus bandwidth each library reached.
type Summary struct {
	Op        Op
	Ratio     []float64 // one per band of Bands
	N         []int     // sizes behind each ratio
	MaxBus    float64   // gccl's highest busbw, GB/s
	MaxBusAt  int64     // at this size
	BaseBus   float64   // the baseline's highest busbw, GB/s (0 without one)
	BaseBusAt int64
}

// Summarize computes op's summary from its rows. Rows where either time is
// not positive are left out of the ratios (a failed or empty measurement).
func Summarize(op Op, rows []Row) Summary {
	s := Summary{Op: op, Ratio: make([]float64, len(Bands)), N: make([]int, len(Bands))}
	logs := make([]float64, len(Bands))
	for _, r := range rows {
		if r.Gccl.BusBW > s.MaxBus {
			s.MaxBus, s.MaxBusAt = r.Gccl.BusBW, r.Size
		}
		if r.Base == nil {
			continue
		}
		if r.Base.BusBW > s.BaseBus {
			s.BaseBus, s.BaseBusAt = r.Base.BusBW, r.Size
		}
		if r.Gccl.Time <= 0 || r.Base.Time <= 0 {
			continue
		}
		for i, b := range Bands {
			if b.Contains(r.Size) {
				logs[i] += math.Log(float64(r.Gccl.Time) / float64(r.Base.Time))
				s.N[i]++
			}
		}
	}
	for i := range Bands {
		s.Ratio[i] = math.NaN()
		if s.N[i] > 0 {
			s.Ratio[i] = math.Exp(logs[i] / float64(s.N[i]))
		}
	}
	return s
}

// WriteSummary prints the summaries as one table: per operation the
// banded time ratios (with the number of sizes behind each) and both
// libraries' peak bus bandwidth.
func WriteSummary(w io.Writer, baseline string, ss []Summary) {
	fmt.Fprintf(w, "# Summary: time ratio gccl/%s, geometric mean per size band (below 1 = gccl faster); peak busbw\n", baseline)
	fmt.Fprintf(w, "#%14s", "op")
	for _, b := range Bands {
		fmt.Fprintf(w, " %13s", b.Name)
	}
	fmt.Fprintf(w, " %16s %16s\n", "gccl busbw", baseline+" busbw")
	for _, s := range ss {
		fmt.Fprintf(w, " %14s", s.Op)
		for i := range Bands {
			fmt.Fprintf(w, " %13s", bandCell(s.Ratio[i], s.N[i]))
		}
		fmt.Fprintf(w, " %16s %16s\n", peakCell(s.MaxBus, s.MaxBusAt), peakCell(s.BaseBus, s.BaseBusAt))
	}
	fmt.Fprintln(w)
}

func bandCell(ratio float64, n int) string {
	if n == 0 || math.IsNaN(ratio) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f (%d)", ratio, n)
}

func peakCell(bw float64, at int64) string {
	if bw <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f @%s", bw, FormatSize(at))
}
