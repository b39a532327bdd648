package comm

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/gccltest"
)

// BenchmarkInitRanks creates and closes communicators of 64, 256 and 1024
// host-backend ranks, goroutines of this process, through InitRankConfig
// (one unique ID) and InitRankScalable (one ID per 32 ranks). It reports
// the wall time of a whole init (every rank joined) and the Go heap the
// ranks hold after it, per rank. Goal (issue 19): 1024 ranks in under 2 s.
func BenchmarkInitRanks(b *testing.B) {
	for _, n := range []int{64, 128, 256, 1024} {
		for _, scalable := range []bool{false, true} {
			b.Run(fmt.Sprintf("ranks=%d/scalable=%v", n, scalable), func(b *testing.B) {
				ids := make([]UniqueID, 1)
				if scalable {
					ids = make([]UniqueID, max(1, n/32))
				}
				var heap float64
				for b.Loop() {
					for i := range ids {
						var err error
						if ids[i], err = NewUniqueID(); err != nil {
							b.Fatal(err)
						}
					}
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					comms, errs := gccltest.Parallel(n, func(r int) (*Comm, error) {
						return InitRankScalable(n, r, ids, testConfig(2*time.Minute))
					})
					runtime.ReadMemStats(&after)
					heap = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
					for r, err := range errs {
						if err != nil {
							b.Fatalf("rank %d: %v", r, err)
						}
					}
					b.StopTimer()
					gccltest.Parallel(n, func(r int) (struct{}, error) { return struct{}{}, comms[r].Close() })
					b.StartTimer()
				}
				b.ReportMetric(heap, "heapB/rank")
			})
		}
	}
}
