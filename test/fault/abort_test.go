package fault

import (
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAbortWhileBlockedInAllReduce: three of four ranks enter an AllReduce
// that the fourth never joins, and wait for it in Synchronize. Another
// goroutine aborts all four communicators: every Abort must return within
// 1 s, every blocked wait must end with ErrRemote (not the 1-minute
// deadline), and every goroutine, fd and shared-memory file must be freed.
func TestAbortWhileBlockedInAllReduce(t *testing.T) {
	before := countResources(t)
	const n, count = 4, 1 << 16
	comms := makeComms(t, n, time.Minute)
	bufs := make([]*Bufs, n)
	for r, c := range comms {
		b, err := NewBufs(c, 4*count, uint64(r))
		require.NoError(t, err)
		bufs[r] = b
	}
	waitErrs := make([]error, n-1)
	var wg sync.WaitGroup
	for r := range n - 1 {
		b := bufs[r]
		require.NoError(t, coll.AllReduce(comms[r], b.Send, b.Recv, count, gccl.Int32, gccl.Sum, b.S))
		wg.Go(func() { waitErrs[r] = b.Dev.Synchronize(b.S) })
	}
	time.Sleep(200 * time.Millisecond) // let the three block on rank 3
	for r := range n - 1 {
		done, err := bufs[r].Dev.Query(bufs[r].S)
		require.NoError(t, err)
		require.False(t, done, "rank %d finished an AllReduce that rank %d never joined", r, n-1)
	}

	start := time.Now()
	abortTimes := make([]time.Duration, n)
	_, errs := gccltest.Parallel(n, func(r int) (struct{}, error) {
		t0 := time.Now()
		err := comms[r].Abort()
		abortTimes[r] = time.Since(t0)
		return struct{}{}, err
	})
	total := time.Since(start)
	for r := range n {
		assert.NoError(t, errs[r], "Abort of rank %d", r)
		assert.Less(t, abortTimes[r], time.Second, "Abort of rank %d", r)
	}
	assert.Less(t, total, time.Second, "aborting all four ranks")
	t.Logf("Abort with 3 ranks blocked in AllReduce: all 4 in %v, slowest rank %v", total, max(abortTimes[0], abortTimes[1], abortTimes[2], abortTimes[3]))

	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Second):
		t.Fatal("Synchronize still blocked 2 s after Abort")
	}
	for r, err := range waitErrs {
		assert.ErrorIs(t, err, gccl.ErrRemote, "rank %d's Synchronize after Abort", r)
	}
	for r, c := range comms {
		assert.ErrorIs(t, coll.AllReduce(c, bufs[r].Send, bufs[r].Recv, count, gccl.Int32, gccl.Sum, bufs[r].S),
			gccl.ErrInvalidUsage, "AllReduce on aborted rank %d", r)
		assert.NoError(t, c.Abort(), "second Abort")
		assert.NoError(t, c.Close(), "Close after Abort")
		bufs[r].Free()
	}
	settle(t, before)
}
