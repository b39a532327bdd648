package report

import (
	"fmt"
	"io"
	"math"

	"github.com/gccl/gccl/internal/perf"
)

// Result is the outcome of one operation's sweep.
type Result struct {
	Op        perf.Op
	Rows      []perf.Row
	Baseline  string // "" when the baseline did not run
	GcclWrong int64  // wrong elements over the rows (-1: none checked)
	BaseWrong int64
}

// NewResult is op's result before any row.
func NewResult(op perf.Op) Result { return Result{Op: op, GcclWrong: -1, BaseWrong: -1} }

// Add adds a row and its wrong counts.
func (res *Result) Add(row perf.Row) {
	res.Rows = append(res.Rows, row)
	res.GcclWrong = addWrong(res.GcclWrong, row.Gccl.Wrong)
	if row.Base != nil {
		res.BaseWrong = addWrong(res.BaseWrong, row.Base.Wrong)
	}
}

// addWrong adds one row's wrong count w to total; -1 (not checked) in
// either is no count, so the total is -1 only when no row was checked.
func addWrong(total, w int64) int64 {
	switch {
	case w < 0:
		return total
	case total < 0:
		return w
	}
	return total + w
}

// WriteOpSummary prints nccl-tests' closing lines of one operation's table:
// wrong values, average bus bandwidth, and against a baseline the
// geometric mean of the time ratios. uncheckedAbove is -checkmax when
// sizes above it were not checked, else 0.
func WriteOpSummary(w io.Writer, res Result, uncheckedAbove int64) {
	fmt.Fprintf(w, "# Out of bounds values : %s%s\n", wrongVerdict(res.GcclWrong), uncheckedNote(uncheckedAbove))
	var bw float64
	for _, row := range res.Rows {
		bw += row.Gccl.BusBW
	}
	if len(res.Rows) > 0 {
		fmt.Fprintf(w, "# Avg bus bandwidth    : %.4f GB/s\n", bw/float64(len(res.Rows)))
	}
	if med, low, n := perf.MemorySummary(res.Rows, memSummaryMin); n > 0 {
		fmt.Fprintf(w, "# memory traffic     : %.1f%% of the copy's bandwidth (median), lowest %.1f%%, over %d sizes >= %s\n",
			med, low, n, perf.FormatSize(memSummaryMin))
	}
	if res.Baseline != "" {
		fmt.Fprintf(w, "# %s out of bounds    : %s\n", res.Baseline, wrongVerdict(res.BaseWrong))
		all, big := ratioMean(res.Rows, 0), ratioMean(res.Rows, 1<<20)
		fmt.Fprintf(w, "# time ratio gccl/%s : geomean %s over all sizes, %s at >= 1M (below 1 = gccl faster)\n",
			res.Baseline, fmtRatio(all), fmtRatio(big))
	}
	fmt.Fprintln(w)
}

// memSummaryMin is the smallest size the memory-traffic summary counts
// (issue 18 asks for >= 75% of the copy from 16 MiB).
const memSummaryMin = 16 << 20

// WriteRunSummary prints, after every table of a run with a baseline, the
// per-operation summary: banded geometric-mean time ratios and peak bus
// bandwidths (perf.Summarize). Operations the baseline did not run are left out.
func WriteRunSummary(w io.Writer, results []Result) {
	var sums []perf.Summary
	name := ""
	for _, res := range results {
		if res.Baseline == "" || len(res.Rows) == 0 {
			continue
		}
		name = res.Baseline
		sums = append(sums, perf.Summarize(res.Op, res.Rows))
	}
	if len(sums) > 0 {
		perf.WriteSummary(w, name, sums)
	}
}

// uncheckedNote says which sizes -checkmax left unchecked.
func uncheckedNote(above int64) string {
	if above == 0 {
		return ""
	}
	return fmt.Sprintf(" (sizes above %s not checked)", perf.FormatSize(above))
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", r)
}

func wrongVerdict(n int64) string {
	switch {
	case n < 0:
		return "not checked"
	case n == 0:
		return "0 OK"
	}
	return fmt.Sprintf("%d FAILED", n)
}

// ratioMean is the geometric mean of gccl/baseline time over rows of at
// least minSize bytes (NaN when there are none).
func ratioMean(rows []perf.Row, minSize int64) float64 {
	var sum float64
	n := 0
	for _, row := range rows {
		if row.Base == nil || row.Size < minSize || row.Gccl.Time <= 0 || row.Base.Time <= 0 {
			continue
		}
		sum += math.Log(float64(row.Gccl.Time) / float64(row.Base.Time))
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Exp(sum / float64(n))
}

// Progress rewrites one status line (rank 0's stderr, -progress); a nil
// *Progress shows nothing.
type Progress struct{ w io.Writer }

// NewProgress shows the progress on w.
func NewProgress(w io.Writer) *Progress { return &Progress{w: w} }

// Show says which size of n (the i-th, from 0) lib is measuring.
func (p *Progress) Show(op perf.Op, size int64, i, n int, lib string) {
	if p != nil {
		fmt.Fprintf(p.w, "\r# %s %s: size %d/%d (%s)      ", op, lib, i+1, n, perf.FormatSize(size))
	}
}

// Clear blanks the status line.
func (p *Progress) Clear() {
	if p != nil {
		fmt.Fprintf(p.w, "\r%60s\r", "")
	}
}
