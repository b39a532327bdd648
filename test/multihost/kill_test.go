package multihost

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"syscall"
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

// killTimeout is the communicators' deadline in the kill test: a survivor
// must report the loss within twice that.
const killTimeout = 5 * time.Second

// killCount is the int32 elements of the killed operation (4 MiB).
const killCount = 1 << 20

// runKill runs a test/fault workload twice, then once more, during which
// the victim kills itself (SIGKILL); a survivor passes when its operation
// failed with gccl.ErrRemote or gccl.ErrTimeout (or succeeded, when its
// share did not need the victim), AsyncError reports the loss naming the
// victim, all within twice the timeout, and Abort took under a second.
//
// A survivor aborts (and so leaves) only once every survivor has seen the
// loss (seenAll), so that none of them sees another survivor leave first.
func runKill(t *testing.T, cm *comm.Comm, place testbed.Place) {
	w, err := fault.WorkloadNamed(os.Getenv(workloadEnv))
	require.NoError(t, err)
	victim, err := strconv.Atoi(os.Getenv(victimEnv))
	require.NoError(t, err, victimEnv)
	b, err := fault.NewBufs(cm, 4*killCount, 1)
	require.NoError(t, err)
	defer b.Free()
	for i := range 2 {
		require.NoError(t, w.Launch(cm, b, killCount), "warm-up %d", i)
		require.NoError(t, b.Dev.Synchronize(b.S), "warm-up %d", i)
	}
	// A barrier: every rank is connected and ready before the victim dies;
	// the victim waits until every rank's barrier is done (a rank still
	// finishing it would otherwise see the loss there).
	require.NoError(t, coll.AllReduce(cm, b.Send, b.Recv, 1, gccl.Int32, gccl.Sum, b.S))
	require.NoError(t, b.Dev.Synchronize(b.S))
	if cm.Rank() == victim {
		require.NoError(t, arrive(place, "ready", -1))
	} else {
		require.NoError(t, os.WriteFile(markFile(place, "ready", place.Rank), nil, 0o644))
	}

	start := time.Now()
	err = w.Launch(cm, b, killCount)
	if cm.Rank() == victim {
		time.Sleep(time.Millisecond)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if err == nil {
		err = b.Dev.Synchronize(b.S)
	}
	synced := time.Since(start)
	var async error
	for async == nil && time.Since(start) < 2*killTimeout {
		async = cm.AsyncError()
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	if err := seenAll(place, victim); err != nil {
		t.Error(err)
	}
	t0 := time.Now()
	abortErr := cm.Abort()
	abortTook := time.Since(t0)
	t.Logf("survivor %d: op after %v: %v; AsyncError after %v: %v; Abort %v in %v",
		cm.Rank(), synced.Round(time.Millisecond), err, took.Round(time.Millisecond), async, abortErr, abortTook)
	if err != nil && !fault.PeerFailure(err) {
		t.Errorf("the operation failed with %v (code %v): want gccl.ErrRemote or gccl.ErrTimeout", err, gccl.Code(err))
	}
	if !fault.PeerFailure(async) {
		t.Errorf("AsyncError is %v: want gccl.ErrRemote or gccl.ErrTimeout", async)
	}
	if !names(err, victim) && !names(async, victim) {
		t.Errorf("neither the operation's error nor AsyncError names rank %d", victim)
	}
	if took > 2*killTimeout {
		t.Errorf("the loss was reported after %v: want under %v", took, 2*killTimeout)
	}
	if abortErr != nil || abortTook > time.Second {
		t.Errorf("Abort: %v after %v", abortErr, abortTook)
	}
}

// seenAll records that this survivor has seen the loss (a file next to
// the job's unique ID) and waits, up to twice the timeout, for every
// other survivor's record.
func seenAll(p testbed.Place, victim int) error { return arrive(p, "seen", victim) }

// arrive records that this rank reached point tag (a file next to the
// job's unique ID) and waits, up to twice the timeout, for every rank but
// skip (-1: none) to record it too.
func arrive(p testbed.Place, tag string, skip int) error {
	mark := func(r int) string { return markFile(p, tag, r) }
	if err := os.WriteFile(mark(p.Rank), nil, 0o644); err != nil {
		return err
	}
	poll := wait.Poller{Deadline: time.Now().Add(2 * killTimeout), What: "the other ranks at " + tag, MaxSleep: 5 * time.Millisecond}
	for r := 0; r < p.NRanks; {
		if _, err := os.Stat(mark(r)); r == skip || err == nil {
			r++
			continue
		}
		if err := poll.Pause(); err != nil {
			return fmt.Errorf("waiting for rank %d to reach %s: %w", r, tag, err)
		}
	}
	return nil
}

// markFile is rank r's record of reaching point tag.
func markFile(p testbed.Place, tag string, r int) string {
	return fmt.Sprintf("%s.%s-%d", p.IDFile, tag, r)
}

// names reports whether err's message names rank r ("rank 3", "ranks 1 and 3").
func names(err error, r int) bool {
	if err == nil {
		return false
	}
	re := regexp.MustCompile(fmt.Sprintf(`\branks? (?:[0-9]+(?:, | and ))*%d\b`, r))
	return re.MatchString(err.Error())
}
