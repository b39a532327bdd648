package hoststream

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/futex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestTasksRunInOrder(t *testing.T) {
	s := New()
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	n := 500 + rng.IntN(500)
	var got []int
	for i := range n {
		sleep := rng.IntN(10) == 0
		require.NoError(t, s.Enqueue(func() error {
			if sleep {
				time.Sleep(time.Microsecond)
			}
			got = append(got, i)
			return nil
		}))
	}
	require.NoError(t, s.Synchronize(ctxFor(t, 10*time.Second)))
	require.Len(t, got, n)
	for i, v := range got {
		require.Equal(t, i, v, "task %d ran out of order", i)
	}
	done, err := s.Query()
	assert.True(t, done)
	assert.NoError(t, err)
}

func TestFirstErrorIsStickyAndLaterTasksAreSkipped(t *testing.T) {
	s := New()
	defer s.Close()
	boom := errors.New("boom")
	var ran atomic.Int32
	failAt := 3 + rand.IntN(5)
	for i := range 20 {
		require.NoError(t, s.Enqueue(func() error {
			ran.Add(1)
			if i == failAt {
				return boom
			}
			if i > failAt {
				return errors.New("a later error must not replace the first")
			}
			return nil
		}))
	}
	err := s.Synchronize(ctxFor(t, 10*time.Second))
	require.Error(t, err)
	assert.ErrorIs(t, err, boom)
	assert.ErrorIs(t, err, gccl.ErrInternal, "a foreign error is wrapped as internal")
	assert.Equal(t, int32(failAt+1), ran.Load(), "tasks after the failure must be skipped")

	// The error stays: new work is skipped and reports the same error.
	var late atomic.Bool
	require.NoError(t, s.Enqueue(func() error { late.Store(true); return nil }))
	assert.ErrorIs(t, s.Synchronize(ctxFor(t, 10*time.Second)), boom)
	assert.False(t, late.Load())
	done, qerr := s.Query()
	assert.True(t, done)
	assert.ErrorIs(t, qerr, boom)
}

func TestTypedErrorsPassThroughUnchanged(t *testing.T) {
	s := New()
	defer s.Close()
	want := gccl.Errorf(gccl.RemoteError, "peer 2", "connection reset")
	require.NoError(t, s.Enqueue(func() error { return want }))
	assert.Same(t, want, s.Synchronize(ctxFor(t, 10*time.Second)))
}

func TestPanicBecomesInternalError(t *testing.T) {
	s := New()
	defer s.Close()
	require.NoError(t, s.Enqueue(func() error { panic("kaputt") }))
	err := s.Synchronize(ctxFor(t, 10*time.Second))
	require.ErrorIs(t, err, gccl.ErrInternal)
	assert.Contains(t, err.Error(), "kaputt")
}

func TestSynchronizeAndQueryWhileBlocked(t *testing.T) {
	s := New()
	defer s.Close()
	release := make(chan struct{})
	require.NoError(t, s.Enqueue(func() error { <-release; return nil }))
	done, err := s.Query()
	assert.False(t, done)
	assert.NoError(t, err)

	start := time.Now()
	err = s.Synchronize(ctxFor(t, 30*time.Millisecond))
	require.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Equal(t, "stream", err.(*gccl.Error).Arg)
	assert.Less(t, time.Since(start), 5*time.Second)

	close(release)
	require.NoError(t, s.Synchronize(ctxFor(t, 10*time.Second)))
}

func TestNilTaskAndNilStream(t *testing.T) {
	s := New()
	defer s.Close()
	assert.ErrorIs(t, s.Enqueue(nil), gccl.ErrInvalidArgument)
	var ns *Stream
	assert.ErrorIs(t, ns.Enqueue(func() error { return nil }), gccl.ErrInvalidArgument)
	assert.ErrorIs(t, ns.Synchronize(context.Background()), gccl.ErrInvalidArgument)
	_, err := ns.Query()
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.NoError(t, ns.Close())
}

func TestCloseRunsQueuedWorkAndRefusesNewWork(t *testing.T) {
	s := New()
	release := make(chan struct{})
	var ran atomic.Int32
	require.NoError(t, s.Enqueue(func() error { <-release; ran.Add(1); return nil }))
	require.NoError(t, s.Enqueue(func() error { ran.Add(1); return nil }))
	ev := s.RecordEvent()
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice is fine")
	assert.True(t, s.Closed())

	assert.ErrorIs(t, s.Enqueue(func() error { return nil }), gccl.ErrInvalidUsage)
	done, err := s.RecordEvent().Query()
	assert.True(t, done)
	assert.ErrorIs(t, err, gccl.ErrInvalidUsage)

	close(release)
	require.NoError(t, ev.Wait(ctxFor(t, 10*time.Second)))
	assert.Equal(t, int32(2), ran.Load())
	assert.NoError(t, s.Synchronize(ctxFor(t, time.Second)), "a closed idle stream synchronizes")
}

func TestIdleStreamHoldsNoGoroutine(t *testing.T) {
	s := New()
	defer s.Close()
	for range 3 {
		require.NoError(t, s.Enqueue(func() error { return nil }))
		require.NoError(t, s.Synchronize(ctxFor(t, 10*time.Second)))
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return !s.running
		}, 5*time.Second, time.Millisecond)
	}
}

// TestSynchronizeIgnoresLaterFailures: a task that fails after the call's
// point is not its error, whether Synchronize spins or sleeps.
func TestSynchronizeIgnoresLaterFailures(t *testing.T) {
	for _, spin := range []time.Duration{0, 2 * time.Millisecond} {
		futex.SetSpin(spin)
		s := New()
		release := make(chan struct{})
		require.NoError(t, s.Enqueue(func() error { <-release; return nil }))
		got := make(chan error, 1)
		go func() { got <- s.SynchronizeWithin(10 * time.Second) }()
		require.Eventually(t, func() bool { // it sleeps: its point is fixed
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.sleepers) > 0
		}, 5*time.Second, 100*time.Microsecond)
		boom := gccl.Errorf(gccl.SystemError, "x", "boom")
		require.NoError(t, s.Enqueue(func() error { return boom }))
		close(release)
		assert.NoError(t, <-got, "spin %v", spin)
		assert.ErrorIs(t, s.SynchronizeWithin(10*time.Second), boom, "spin %v", spin)
		require.NoError(t, s.Close())
	}
	futex.SetSpin(-1)
}

// TestWorkerSpinsForWork: where waits spin, the worker stays for new work
// that long after the queue empties, then leaves.
func TestWorkerSpinsForWork(t *testing.T) {
	futex.SetSpin(200 * time.Millisecond)
	defer futex.SetSpin(-1)
	s := New()
	defer s.Close()
	require.NoError(t, s.Enqueue(func() error { return nil }))
	require.NoError(t, s.SynchronizeWithin(10*time.Second))
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	assert.True(t, running, "the worker left at once")
	require.NoError(t, s.Enqueue(func() error { return nil }))
	require.NoError(t, s.SynchronizeWithin(10*time.Second))
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.running
	}, 5*time.Second, time.Millisecond)
}

func TestSynchronizeWithinTimesOut(t *testing.T) {
	s := New()
	defer s.Close()
	release := make(chan struct{})
	defer close(release)
	require.NoError(t, s.Enqueue(func() error { <-release; return nil }))
	err := s.SynchronizeWithin(20 * time.Millisecond)
	require.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Equal(t, "stream", err.(*gccl.Error).Arg)
}

// goid is the calling goroutine's id, from its stack's first line.
func goid() string {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	return f[1]
}

// TestParkedWorkerRunsNextTask: without spinning, a task enqueued after
// the queue emptied runs on the same worker goroutine, woken from its
// park, not on a new one.
func TestParkedWorkerRunsNextTask(t *testing.T) {
	futex.SetSpin(0)
	defer futex.SetSpin(-1)
	s := New()
	defer s.Close()
	var ids [2]string
	for i := range ids {
		require.NoError(t, s.Enqueue(func() error { ids[i] = goid(); return nil }))
		require.NoError(t, s.SynchronizeWithin(10*time.Second))
		require.Eventually(t, func() bool { // the worker parked
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.parked
		}, 5*time.Second, 100*time.Microsecond)
	}
	assert.Equal(t, ids[0], ids[1], "each task on its own goroutine")
}

// TestCloseEndsParkedWorker: Close wakes a parked worker, which exits.
func TestCloseEndsParkedWorker(t *testing.T) {
	futex.SetSpin(0)
	defer futex.SetSpin(-1)
	s := New()
	require.NoError(t, s.Enqueue(func() error { return nil }))
	require.NoError(t, s.SynchronizeWithin(10*time.Second))
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.parked
	}, 5*time.Second, 100*time.Microsecond)
	start := time.Now()
	require.NoError(t, s.Close())
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.running
	}, 5*time.Second, 100*time.Microsecond)
	assert.Less(t, time.Since(start), parkIdle/2, "the worker stayed parked after Close")
}
