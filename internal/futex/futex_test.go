package futex

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReachedWraps(t *testing.T) {
	assert.True(t, Reached(5, 5))
	assert.True(t, Reached(6, 5))
	assert.False(t, Reached(4, 5))
	assert.True(t, Reached(1, 0xFFFFFFFF), "1 is past the wrap")
	assert.False(t, Reached(0xFFFFFFFF, 1))
}

// TestAwait: a waiter that went to sleep is woken by Advance long before
// its nap would end it many times over, and check ends a wait with its error.
func TestAwait(t *testing.T) {
	var seq, waiters uint32
	c := Counter{Seq: &seq, Waiters: &waiters}
	done := make(chan error, 1)
	go func() { done <- c.Await(3, func() error { return nil }) }()
	time.Sleep(50 * time.Millisecond) // the waiter sleeps on the futex by now
	c.Advance(2)
	select {
	case <-done:
		t.Fatal("Await returned before the counter reached its target")
	case <-time.After(20 * time.Millisecond):
	}
	c.Advance(3)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Await was not woken")
	}
	assert.Zero(t, waiters, "no sleeper left counted")

	stop := errors.New("peer failed")
	err := c.Await(10, func() error { return stop })
	assert.ErrorIs(t, err, stop)
}

// TestSpinThenSleep: with a spin time a waiter keeps polling (it is not
// counted as a sleeper) until the time is up; without one it sleeps on the
// futex after a few hundred polls. Either way Advance ends the wait.
func TestSpinThenSleep(t *testing.T) {
	prev := spin.Load()
	t.Cleanup(func() { spin.Store(prev) })
	for _, tc := range []struct {
		spin     time.Duration
		sleepers uint32
	}{{5 * time.Second, 0}, {0, 1}} {
		SetSpin(tc.spin)
		var seq, waiters uint32
		c := Counter{Seq: &seq, Waiters: &waiters}
		started := make(chan struct{})
		var once sync.Once
		done := make(chan error, 1)
		go func() { done <- c.Await(1, func() error { once.Do(func() { close(started) }); return nil }) }()
		<-started
		if tc.sleepers == 0 {
			for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
				require.Zero(t, atomic.LoadUint32(&waiters), "spin %v: the waiter slept within its spin time", tc.spin)
			}
		} else {
			assert.Eventually(t, func() bool { return atomic.LoadUint32(&waiters) == 1 }, 2*time.Second, time.Millisecond,
				"spin %v: the waiter never slept", tc.spin)
		}
		c.Advance(1)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("spin %v: Await was not woken", tc.spin)
		}
	}
	SetSpin(-1)
	want := time.Duration(0)
	if runtime.NumCPU() >= autoSpinCPUs {
		want = AutoSpin
	}
	assert.Equal(t, want, SpinTime(), "auto")
}

// TestShareCPUs: with GCCL_HOST_SPIN auto, more ranks on this host than
// CPUs turn spinning off; as many as the CPUs leave it; a set spin time
// is the user's and stays.
func TestShareCPUs(t *testing.T) {
	prev, prevCrowded := spin.Load(), crowded.Load()
	t.Cleanup(func() { spin.Store(prev); crowded.Store(prevCrowded) })
	t.Setenv("GCCL_HOST_SPIN", "auto")
	env.Reload()
	t.Cleanup(func() { env.Reload() })
	SetSpin(time.Millisecond)
	crowded.Store(false)
	ShareCPUs(runtime.NumCPU() / 2)
	assert.Equal(t, time.Millisecond, StreamSpinTime(), "half as many ranks as CPUs: streams spin")
	ShareCPUs(runtime.NumCPU())
	assert.Equal(t, time.Millisecond, SpinTime(), "as many ranks as CPUs")
	assert.Zero(t, StreamSpinTime(), "more ranks than half the CPUs: streams do not spin")
	ShareCPUs(runtime.NumCPU() + 1)
	assert.Zero(t, SpinTime(), "more ranks than CPUs, GCCL_HOST_SPIN unset")
	t.Setenv("GCCL_HOST_SPIN", "1ms")
	env.Reload()
	SetSpin(time.Millisecond)
	ShareCPUs(runtime.NumCPU() + 1)
	assert.Equal(t, time.Millisecond, SpinTime(), "GCCL_HOST_SPIN set: kept")
}

// TestSleep: Sleep ends after its duration, at once when the word differs,
// and early on WakeAll.
func TestSleep(t *testing.T) {
	var w uint32
	start := time.Now()
	Sleep(&w, 0, 200*time.Microsecond)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Microsecond)
	start = time.Now()
	Sleep(&w, 1, time.Second)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "the word is not 1: no sleep")

	woke := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for atomic.LoadUint32(&w) == 0 {
			Sleep(&w, 0, 10*time.Second)
		}
		woke <- time.Since(start)
	}()
	time.Sleep(20 * time.Millisecond)
	atomic.StoreUint32(&w, 1)
	WakeAll(&w)
	select {
	case d := <-woke:
		assert.Less(t, d, 5*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("WakeAll did not wake the sleeper")
	}
}
