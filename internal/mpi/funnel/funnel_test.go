package funnel

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errStopped = gccl.Errorf(gccl.InvalidUsage, "mpi", "stopped")

func TestFunnelRunsEveryCallOnOneThread(t *testing.T) {
	e := New(errStopped)
	defer e.Stop()
	var funnelTid int
	require.NoError(t, e.Do(func() { funnelTid = syscall.Gettid() }))
	var mu sync.Mutex
	tids := map[int]int{}
	counter := 0 // unsynchronised on purpose: the race detector sees it if calls overlap
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				require.NoError(t, e.Do(func() {
					counter++
					mu.Lock()
					tids[syscall.Gettid()]++
					mu.Unlock()
				}))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 400, counter)
	assert.Equal(t, map[int]int{funnelTid: 400}, tids)
}

func TestDirectCallsRunOnTheCaller(t *testing.T) {
	e := New(errStopped)
	defer e.Stop()
	e.SetDirect(true)
	var funnelTid int
	require.NoError(t, e.OnThread(func() { funnelTid = syscall.Gettid() }, time.Time{}))
	done := make(chan int)
	go func() {
		var tid int
		_ = e.Do(func() { tid = syscall.Gettid() })
		done <- tid
	}()
	assert.NotEqual(t, funnelTid, <-done)
}

func TestFunnelDeadline(t *testing.T) {
	e := New(errStopped)
	defer e.Stop()
	release := make(chan struct{})
	go func() { _ = e.Do(func() { <-release }) }() // the funnel is now busy
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	err := e.OnThread(func() {}, time.Now().Add(50*time.Millisecond))
	require.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Less(t, time.Since(start), 2*time.Second)
	close(release)

	// A call that starts but runs past the deadline also times out.
	slow := make(chan struct{})
	err = e.OnThread(func() { <-slow }, time.Now().Add(30*time.Millisecond))
	require.ErrorIs(t, err, gccl.ErrTimeout)
	close(slow)
	require.NoError(t, e.Do(func() {}), "the funnel must serve calls after a timeout")
}

func TestFunnelStop(t *testing.T) {
	e := New(errStopped)
	ran := false
	require.NoError(t, e.Do(func() { ran = true }))
	assert.True(t, ran)
	e.Stop()
	e.Stop()
	<-e.done
	require.ErrorIs(t, e.Do(func() { t.Error("ran after stop") }), gccl.ErrInvalidUsage)
	require.ErrorIs(t, e.OnThread(func() { t.Error("ran after stop") }, time.Time{}), gccl.ErrInvalidUsage)
}

// TestBlockingGivesUpAtTheDeadline: a call that blocks past the deadline
// returns ErrTimeout to its caller, funnelled or direct, and the executor
// still serves calls once it has returned.
func TestBlockingGivesUpAtTheDeadline(t *testing.T) {
	for _, direct := range []bool{false, true} {
		e := New(errStopped)
		e.SetDirect(direct)
		release := make(chan struct{})
		start := time.Now()
		err := e.Blocking(time.Now().Add(30*time.Millisecond), func() { <-release })
		require.ErrorIs(t, err, gccl.ErrTimeout, "direct=%v", direct)
		assert.Less(t, time.Since(start), 2*time.Second)
		close(release)
		ran := false
		require.NoError(t, e.Blocking(time.Now().Add(time.Minute), func() { ran = true }))
		assert.True(t, ran)
		e.Stop()
	}
}
