package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/internal/perf"
)

// WriteInit prints the init line of the header:
//
//	# init: gccl 123.4 ms (median 120.1 ms), 24.0 MiB device memory (after first op 24.0 MiB) | nccl 456.7 ms (median 450.2 ms), 612.0 MiB device memory (after first op 700.0 MiB) | ratio t 0.27 mem 0.04 (after first op 0.03)
//
// or, on the host backend, "# init: gccl 12.3 ms (median 11.9 ms), device memory N/A (host backend)".
func WriteInit(w io.Writer, s initcost.Summary) {
	parts := []string{initStatsString(s.Gccl)}
	if b := s.Base; b != nil {
		parts = append(parts, initStatsString(*b), fmt.Sprintf("ratio t %s mem %s (after first op %s)",
			fmtRatio(perf.Ratio(float64(s.Gccl.MaxTime), float64(b.MaxTime))),
			fmtRatio(memRatio(s.Gccl.MemInit, b.MemInit)), fmtRatio(memRatio(s.Gccl.MemFirst, b.MemFirst))))
	}
	fmt.Fprintf(w, "# init: %s\n", strings.Join(parts, " | "))
}

// initStatsString is one library's part of the init line.
func initStatsString(s initcost.Stats) string {
	t := fmt.Sprintf("%s %s ms (median %s ms)", s.Name, fmtMS(s.MaxTime), fmtMS(s.MedianTime))
	if s.MemInit < 0 {
		return t + ", device memory N/A (host backend)"
	}
	return fmt.Sprintf("%s, %s device memory (after first op %s)", t, fmtMiB(s.MemInit), fmtMiB(s.MemFirst))
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
