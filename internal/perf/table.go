package perf

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Measure is one library's figures at one size.
type Measure struct {
	Time   time.Duration // median
	Spread float64       // relative interquartile range
	AlgBW  float64       // GB/s
	BusBW  float64       // GB/s
	Wrong  int64         // elements that failed the check (-1: not checked)
}

// NewMeasure computes a Measure from the timings of one size.
func NewMeasure(op Op, size int64, nranks int, times []time.Duration, wrong int64) Measure {
	m := Median(times)
	alg, bus := Bandwidths(op, size, nranks, m)
	return Measure{Time: m, Spread: Spread(times), AlgBW: alg, BusBW: bus, Wrong: wrong}
}

// Row is one line of the result table.
type Row struct {
	Size  int64 // bytes, as nccl-tests counts them for the operation
	Count int   // elements
	Type  string
	RedOp string // "-" for operations without one
	Root  int    // -1 for rootless operations
	Gccl  Measure
	Base  *Measure // nil without a baseline
	Mem   *Memory  // nil without the memory view
}

// Table writes rows in nccl-tests' layout, with the baseline's columns and
// the time ratio gccl/baseline when a baseline is set.
type Table struct {
	W        io.Writer
	Baseline string // "" for none
	Memory   bool   // the memory-traffic columns (rows without a view show N/A)
}

// Header prints the column titles.
func (t Table) Header(title string) {
	fmt.Fprintf(t.W, "# %s\n", title)
	fmt.Fprintf(t.W, "#%11s %12s %9s %7s %5s %10s %8s %8s %6s", "size", "count", "type", "redop", "root",
		"time", "algbw", "busbw", "#wrong")
	if t.Baseline != "" {
		fmt.Fprintf(t.W, " %10s %8s %8s %6s %7s", t.Baseline+" time", "algbw", "busbw", "#wrong", "ratio")
	}
	if t.Memory {
		memHead(t.W, false)
	}
	fmt.Fprintln(t.W)
	fmt.Fprintf(t.W, "#%11s %12s %9s %7s %5s %10s %8s %8s %6s", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "")
	if t.Baseline != "" {
		fmt.Fprintf(t.W, " %10s %8s %8s %6s %7s", "(us)", "(GB/s)", "(GB/s)", "", "(t/t)")
	}
	if t.Memory {
		memHead(t.W, true)
	}
	fmt.Fprintln(t.W)
}

// Row prints one row.
func (t Table) Row(r Row) {
	fmt.Fprintf(t.W, " %11d %12d %9s %7s %5d", r.Size, r.Count, r.Type, r.RedOp, r.Root)
	writeMeasure(t.W, r.Gccl)
	if t.Baseline != "" && r.Base != nil {
		writeMeasure(t.W, *r.Base)
		fmt.Fprintf(t.W, " %7.2f", Ratio(float64(r.Gccl.Time), float64(r.Base.Time)))
	} else if t.Baseline != "" {
		fmt.Fprintf(t.W, " %10s %8s %8s %6s %7s", "N/A", "N/A", "N/A", "N/A", "N/A")
	}
	if t.Memory {
		writeMemory(t.W, r.Mem)
	}
	fmt.Fprintln(t.W)
}

func writeMeasure(w io.Writer, m Measure) {
	fmt.Fprintf(w, " %10.2f %8.2f %8.2f %6s", float64(m.Time.Nanoseconds())/1e3, m.AlgBW, m.BusBW, wrongString(m.Wrong))
}

func wrongString(n int64) string {
	if n < 0 {
		return "N/A"
	}
	return strconv.FormatInt(n, 10)
}

// WriteCSV writes rows as CSV with a header line; the memory view's
// columns come last when any row has one.
func WriteCSV(w io.Writer, op Op, baseline string, rows []Row) error {
	cw := csv.NewWriter(w)
	head := []string{"op", "size_bytes", "count", "type", "redop", "root", "time_us", "spread", "algbw_gbs", "busbw_gbs", "wrong"}
	if baseline != "" {
		head = append(head, baseline+"_time_us", baseline+"_spread", baseline+"_algbw_gbs", baseline+"_busbw_gbs", baseline+"_wrong", "time_ratio")
	}
	mem := false
	for _, r := range rows {
		mem = mem || r.Mem != nil
	}
	if mem {
		head = append(head, memCSVHead...)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range rows {
		rec := []string{string(op), strconv.FormatInt(r.Size, 10), strconv.Itoa(r.Count), r.Type, r.RedOp, strconv.Itoa(r.Root)}
		rec = append(rec, measureFields(r.Gccl)...)
		if baseline != "" && r.Base != nil {
			rec = append(rec, measureFields(*r.Base)...)
			rec = append(rec, fmtF(Ratio(float64(r.Gccl.Time), float64(r.Base.Time))))
		} else if baseline != "" && mem { // keep the memory columns under their heads
			rec = append(rec, "", "", "", "", "", "")
		}
		if mem {
			rec = append(rec, memFields(r.Mem)...)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func measureFields(m Measure) []string {
	return []string{fmtF(float64(m.Time.Nanoseconds()) / 1e3), fmtF(m.Spread), fmtF(m.AlgBW), fmtF(m.BusBW), strconv.FormatInt(m.Wrong, 10)}
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'f', 4, 64) }
