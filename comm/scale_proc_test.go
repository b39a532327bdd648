package comm

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

var maxProcs = flag.Int("init.maxprocs", 256, "BenchmarkInitProcesses: the most processes to start")

// The child processes of BenchmarkInitProcesses find their part here.
const (
	procChild = "GCCL_BENCH_INIT_CHILD" // "rank nranks startUnixNano"
	procIDs   = "GCCL_BENCH_INIT_IDS"   // hex unique IDs, comma-separated
)

// BenchmarkInitProcesses is BenchmarkInitRanks with one process per rank
// (copies of this test binary, started first and then released together
// at one instant): init time is from that instant to the last rank's
// return; heap and descriptors are each process's own growth over its
// init, averaged. The unique IDs come from this process, whose root
// listener serves every rendezvous.
func BenchmarkInitProcesses(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		for _, scalable := range []bool{false, true} {
			b.Run(fmt.Sprintf("ranks=%d/scalable=%v", n, scalable), func(b *testing.B) {
				if n > *maxProcs {
					b.Skipf("%d processes (about 12 MB each) exceed -init.maxprocs=%d", n, *maxProcs)
				}
				var res procResult
				for b.Loop() {
					res = runProcesses(b, n, scalable)
				}
				b.ReportMetric(res.init.Seconds()*1e9, "init-ns")
				b.ReportMetric(res.heap, "heapB/rank")
				b.ReportMetric(res.fds, "fds/rank")
			})
		}
	}
}

type procResult struct {
	init      time.Duration
	heap, fds float64
}

func runProcesses(b *testing.B, n int, scalable bool) procResult {
	ids := make([]string, 1)
	if scalable {
		ids = make([]string, max(1, n/32))
	}
	for i := range ids {
		id, err := NewUniqueID()
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id.String()
	}
	start := time.Now().Add(time.Duration(n)*40*time.Millisecond + time.Second) // time to start them all
	cmds := make([]*exec.Cmd, n)
	outs := make([]io.Reader, n)
	stdins := make([]io.WriteCloser, n)
	for r := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestInitChild$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d", procChild, r, n, start.UnixNano()), procIDs+"="+strings.Join(ids, ","), "GOMAXPROCS=1")
		cmd.Stderr = io.Discard
		var err error
		if stdins[r], err = cmd.StdinPipe(); err != nil {
			b.Fatal(err)
		}
		if outs[r], err = cmd.StdoutPipe(); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds[r] = cmd
	}
	defer func() {
		for r := range n {
			_ = stdins[r].Close() // the children close their communicators and exit
			_ = cmds[r].Wait()
		}
	}()
	if time.Now().After(start) {
		b.Fatalf("starting %d processes took past the start instant; raise the allowance", n)
	}
	var res procResult
	var last int64
	for r := range n {
		line, err := bufio.NewReader(outs[r]).ReadString('\n')
		var end int64
		var heap, fds float64
		if _, serr := fmt.Sscanf(line, "RESULT %d %g %g", &end, &heap, &fds); err != nil || serr != nil {
			b.Fatalf("rank %d: %q (%v)", r, line, err)
		}
		last = max(last, end)
		res.heap += heap / float64(n)
		res.fds += fds / float64(n)
	}
	res.init = time.Unix(0, last).Sub(start)
	return res
}

// TestInitChild is one rank of BenchmarkInitProcesses; it skips elsewhere.
func TestInitChild(t *testing.T) {
	spec := os.Getenv(procChild)
	if spec == "" {
		t.Skip("run by BenchmarkInitProcesses")
	}
	var rank, n int
	var startNs int64
	if _, err := fmt.Sscanf(spec, "%d %d %d", &rank, &n, &startNs); err != nil {
		t.Fatal(err)
	}
	var ids []UniqueID
	for _, s := range strings.Split(os.Getenv(procIDs), ",") {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		id, err := ParseUniqueID(b)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fd0 := countFDs(t)
	time.Sleep(time.Until(time.Unix(0, startNs)))
	c, err := InitRankScalable(n, rank, ids, testConfig(2*time.Minute))
	end := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC() // what the rank holds, not its garbage
	runtime.ReadMemStats(&after)
	fmt.Printf("RESULT %d %d %d\n", end.UnixNano(), after.HeapAlloc-before.HeapAlloc, countFDs(t)-fd0)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent has every result
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
