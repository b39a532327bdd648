package comm

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/gccltest"
)

// BenchmarkInitRanks creates and closes communicators of 64, 256 and 1024
// host-backend ranks, goroutines of this process, through InitRankConfig
// (one unique ID) and InitRankScalable (one ID per 32 ranks). It reports
// the wall time of a whole init (every rank joined) and the CPU time the
// process spent on it (user and system: on a shared machine, the figure
// other processes' load does not inflate), and per rank the Go heap the
// ranks hold after it and the file descriptors they opened.
// Goal (issue 19): 1024 ranks in under 2 s.
func BenchmarkInitRanks(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		for _, scalable := range []bool{false, true} {
			b.Run(fmt.Sprintf("ranks=%d/scalable=%v", n, scalable), func(b *testing.B) {
				ids := make([]UniqueID, 1)
				if scalable {
					ids = make([]UniqueID, max(1, n/32))
				}
				var heap, fds, cpu float64
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
					fd0, cpu0 := countFDs(b), cpuTime(b)
					comms, errs := gccltest.Parallel(n, func(r int) (*Comm, error) {
						if scalable {
							return InitRankScalable(n, r, ids, testConfig(2*time.Minute))
						}
						return InitRankConfig(n, ids[0], r, testConfig(2*time.Minute))
					})
					b.StopTimer()
					cpu = float64(cpuTime(b) - cpu0)
					runtime.GC() // what the ranks hold, not their garbage
					runtime.ReadMemStats(&after)
					heap = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
					fds = float64(countFDs(b)-fd0) / float64(n)
					for r, err := range errs {
						if err != nil {
							b.Fatalf("rank %d: %v", r, err)
						}
					}
					gccltest.Parallel(n, func(r int) (struct{}, error) { return struct{}{}, comms[r].Close() })
					b.StartTimer()
				}
				b.ReportMetric(heap, "heapB/rank")
				b.ReportMetric(fds, "fds/rank")
				b.ReportMetric(cpu, "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
