package perf

import (
	"fmt"
	"io"
	"math"
	"sort"
	"time"
)

// Memory is the memory-traffic view of one row on a GPU: the bytes the
// chosen kernels read and write in device memory against the time, next
// to a device-to-device copy of the row's size timed in the same run.
// It is the yardstick where no baseline can run (NCCL refuses two ranks
// on one GPU).
type Memory struct {
	Bytes    int64         // read + written on the busiest GPU (every rank on it together)
	Time     time.Duration // the operation's time (gccl's median)
	CopyTime time.Duration // median time of one copy of the row's size
	CopySize int64         // that copy's size (it reads and writes it: 2x the traffic)
	Path     string        // how gccl ran it (a kernel family, "copy", "none"); "mixed" when ranks differ
}

// GBs is the memory traffic per second in GB/s (0 without a time).
func (m Memory) GBs() float64 { return gbs(m.Bytes, m.Time) }

// CopyGBs is the copy's traffic (read and write) per second in GB/s.
func (m Memory) CopyGBs() float64 { return gbs(2*m.CopySize, m.CopyTime) }

// PctCopy is GBs as a percentage of CopyGBs (NaN without a copy time).
func (m Memory) PctCopy() float64 {
	c := m.CopyGBs()
	if c == 0 {
		return math.NaN()
	}
	return 100 * m.GBs() / c
}

func gbs(bytes int64, t time.Duration) float64 {
	if t <= 0 {
		return 0
	}
	return float64(bytes) / t.Seconds() / 1e9
}

// memHead are the table's memory columns.
func memHead(w io.Writer, units bool) {
	if units {
		fmt.Fprintf(w, " %9s %6s %9s %s", "(GB/s)", "(%)", "(GB/s)", "")
		return
	}
	fmt.Fprintf(w, " %9s %6s %9s %s", "memGB/s", "%copy", "copyGB/s", "path")
}

func writeMemory(w io.Writer, m *Memory) {
	if m == nil {
		fmt.Fprintf(w, " %9s %6s %9s %s", "N/A", "N/A", "N/A", "-")
		return
	}
	fmt.Fprintf(w, " %9.1f %6.1f %9.1f %s", m.GBs(), m.PctCopy(), m.CopyGBs(), m.Path)
}

// memFields are the CSV fields of the memory view ("" when m is nil).
func memFields(m *Memory) []string {
	if m == nil {
		return []string{"", "", "", "", ""}
	}
	return []string{fmt.Sprint(m.Bytes), fmtF(m.GBs()), fmtF(m.CopyGBs()), fmtF(m.PctCopy()), m.Path}
}

var memCSVHead = []string{"mem_bytes", "mem_gbs", "copy_gbs", "pct_copy", "gpu_path"}

// MemorySummary is the median and the lowest %copy over rows of at least
// minSize bytes that have a memory view; n is how many there were.
func MemorySummary(rows []Row, minSize int64) (median, lowest float64, n int) {
	var pct []float64
	for _, r := range rows {
		if r.Mem == nil || r.Size < minSize {
			continue
		}
		if p := r.Mem.PctCopy(); !math.IsNaN(p) {
			pct = append(pct, p)
		}
	}
	if len(pct) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	sort.Float64s(pct)
	median = pct[len(pct)/2]
	if len(pct)%2 == 0 {
		median = (pct[len(pct)/2-1] + pct[len(pct)/2]) / 2
	}
	return median, pct[0], len(pct)
}
