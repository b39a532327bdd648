package multihost

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/testbed"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/test/fault"
	"github.com/stretchr/testify/require"
)

// The cut test's environment: a directory where the ranks say they are
// ready and the parent says when it cut the link, and the ranks of the
// host it cuts.
const (
	syncEnv    = "MULTIHOST_SYNC"
	cutRankEnv = "MULTIHOST_CUT_RANKS"
)

// cutWait bounds the series of operations a rank runs while waiting for
// the cut to make one fail.
const cutWait = 30 * time.Second

// runCut runs a test/fault workload over and over until one fails: the
// parent unplugs one host's link (no FIN, no RST: as a machine that dies)
// once every rank is ready. Every rank, on either side of the cut, must
// see its operation and AsyncError fail with gccl.ErrTimeout or
// gccl.ErrRemote naming a rank across the cut, within twice the deadline
// of the cut, and Abort in under a second.
func runCut(t *testing.T, cm *comm.Comm, place testbed.Place) {
	w, err := fault.WorkloadNamed(os.Getenv(workloadEnv))
	require.NoError(t, err)
	dir := os.Getenv(syncEnv)
	cut := map[int]bool{}
	for _, s := range strings.Split(os.Getenv(cutRankEnv), ",") {
		r, err := strconv.Atoi(s)
		require.NoError(t, err, cutRankEnv)
		cut[r] = true
	}
	b, err := fault.NewBufs(cm, 4*killCount, 1)
	require.NoError(t, err)
	defer b.Free()
	for i := range 2 {
		require.NoError(t, w.Launch(cm, b, killCount), "warm-up %d", i)
		require.NoError(t, b.Dev.Synchronize(b.S), "warm-up %d", i)
	}
	require.NoError(t, coll.AllReduce(cm, b.Send, b.Recv, 1, gccl.Int32, gccl.Sum, b.S))
	require.NoError(t, b.Dev.Synchronize(b.S))
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("ready-%d", cm.Rank())), nil, 0o644))

	start, ops := time.Now(), 0
	for err == nil && time.Since(start) < cutWait {
		if err = w.Launch(cm, b, killCount); err == nil {
			err = b.Dev.Synchronize(b.S)
		}
		ops++
	}
	failed := time.Now()
	var async error
	for async == nil && time.Since(failed) < 2*killTimeout {
		async = cm.AsyncError()
		time.Sleep(time.Millisecond)
	}
	seenErr := seenAll(testbed.Place{Rank: cm.Rank(), NRanks: cm.Count(), IDFile: filepath.Join(dir, "cut")}, -1)
	t0 := time.Now()
	abortErr := cm.Abort()
	abortTook := time.Since(t0)
	cutAt, cerr := cutTime(dir)
	require.NoError(t, cerr)
	after := failed.Sub(cutAt)
	t.Logf("rank %d (%s the cut): op %d failed %v after the cut: %v; AsyncError: %v; Abort %v in %v",
		cm.Rank(), map[bool]string{true: "behind", false: "before"}[cut[cm.Rank()]], ops,
		after.Round(time.Millisecond), err, async, abortErr, abortTook)
	require.Error(t, err, "no operation failed within %v of the cut", cutWait)
	if !fault.PeerFailure(err) || !fault.PeerFailure(async) {
		t.Errorf("operation: %v, AsyncError: %v: want gccl.ErrTimeout or gccl.ErrRemote", gccl.Code(err), gccl.Code(async))
	}
	across := false
	for r := range cm.Count() {
		if cut[r] != cut[cm.Rank()] && (names(err, r) || names(async, r)) {
			across = true
		}
	}
	if !across {
		t.Errorf("neither error names a rank across the cut")
	}
	if after > 2*killTimeout {
		t.Errorf("the failure came %v after the cut: want under %v", after, 2*killTimeout)
	}
	if seenErr != nil {
		t.Error(seenErr)
	}
	if abortErr != nil || abortTook > time.Second {
		t.Errorf("Abort: %v after %v", abortErr, abortTook)
	}
}

// cutTime reads when the parent cut the link.
func cutTime(dir string) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cut-at"))
	if err != nil {
		return time.Time{}, fmt.Errorf("the parent wrote no cut time: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Unix(0, ns), err
}

// TestCutLink unplugs host 1 of 3 hosts × 2 ranks while the ranks run a
// series of AllReduces (then Send/Recv ring shifts): no rank may hang,
// each must report the loss with a typed error naming a rank across the
// cut.
func TestCutLink(t *testing.T) {
	requireSuite(t)
	shape := bedShape{hosts: 3, per: 2}
	const cutHost = 1
	var behind []string
	for r := cutHost * shape.per; r < (cutHost+1)*shape.per; r++ {
		behind = append(behind, strconv.Itoa(r))
	}
	for _, prov := range providers() {
		for _, w := range []string{"allreduce", "sendrecv"} {
			t.Run(prov+"/"+w, func(t *testing.T) {
				dir := t.TempDir()
				b, err := testbed.New(testbed.Config{Hosts: shape.hosts})
				require.NoError(t, err)
				defer func() { require.NoError(t, b.Close()) }()
				exe, err := os.Executable()
				require.NoError(t, err)
				var out strings.Builder
				job, err := b.Launch(shape.per, []string{exe, "-test.run=^TestRank$", "-test.count=1", "-test.v"},
					append(netEnv(t, prov), roleEnv+"=cut", workloadEnv+"="+w, syncEnv+"="+dir,
						cutRankEnv+"="+strings.Join(behind, ",")), &out)
				require.NoError(t, err)
				ready := wait.Poller{Deadline: time.Now().Add(time.Minute), What: "the ranks' readiness", MaxSleep: 10 * time.Millisecond}
				for r := 0; r < shape.hosts*shape.per; {
					if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ready-%d", r))); err == nil {
						r++
					} else if perr := ready.Pause(); perr != nil {
						job.Kill()
						t.Fatalf("%v\n%s%v", perr, out.String(), testbed.Failed(job.Wait(time.Second)))
					}
				}
				time.Sleep(20 * time.Millisecond) // into the series
				require.NoError(t, b.Cut(cutHost, false))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "cut-at"), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644))
				if err := testbed.Failed(job.Wait(jobLimit)); err != nil {
					t.Errorf("%v\n%s", err, out.String())
				} else {
					t.Log("\n" + grepLines(out.String(), "cut_test.go"))
				}
			})
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			b.WriteString(line)
		}
	}
	return b.String()
}
