package hoststream

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// starter is a Starter whose Start returns p (and err) and whose Run
// records the goroutine it ran on; log, when set, records the order.
type starter struct {
	p       Progress
	err     error
	panics  bool
	started atomic.Int32
	ran     atomic.Int32
	startG  string
	runG    string
	mu      sync.Mutex
	log     *[]int
	id      int
}

func (s *starter) Start() (Progress, error) {
	s.started.Add(1)
	s.startG = goid()
	if s.panics {
		panic("start failed")
	}
	return s.p, s.err
}

func (s *starter) Run() error {
	s.ran.Add(1)
	s.mu.Lock()
	s.runG = goid()
	s.mu.Unlock()
	if s.log != nil {
		*s.log = append(*s.log, s.id)
	}
	return nil
}

func (s *starter) runOn() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runG
}

// TestStarterFinishedOnEnqueue: on an idle stream Start runs on the
// enqueuing goroutine, and a task it finished is never Run.
func TestStarterFinishedOnEnqueue(t *testing.T) {
	s := New()
	defer s.Close()
	st := &starter{p: Finished}
	require.NoError(t, s.EnqueueTask(st))
	assert.Equal(t, goid(), st.startG)
	done, err := s.Query()
	assert.True(t, done, "a finished task is done at once")
	assert.NoError(t, err)
	require.NoError(t, s.Synchronize(ctxFor(t, 10*time.Second)))
	assert.Zero(t, st.ran.Load())
}

// TestHeldTaskGoesToWorker: a started task that nobody synchronizes is
// run by the worker after at most about two watchEvery.
func TestHeldTaskGoesToWorker(t *testing.T) {
	s := New()
	defer s.Close()
	st := &starter{p: Started}
	start := time.Now()
	require.NoError(t, s.EnqueueTask(st))
	require.Eventually(t, func() bool { return st.ran.Load() == 1 }, 5*time.Second, 100*time.Microsecond)
	assert.NotEqual(t, goid(), st.runOn())
	t.Logf("held task ran after %v", time.Since(start))
	require.NoError(t, s.SynchronizeWithin(10*time.Second))
}

// TestHeldTaskReleased: more work, Query, Release and Close each give a
// held task to the worker at once; later work runs after it.
func TestHeldTaskReleased(t *testing.T) {
	for name, act := range map[string]func(s *Stream, log *[]int){
		"enqueue": func(s *Stream, log *[]int) {
			require.NoError(t, s.Enqueue(func() error { *log = append(*log, 2); return nil }))
		},
		"query":   func(s *Stream, _ *[]int) { _, _ = s.Query() },
		"release": func(s *Stream, _ *[]int) { s.Release() },
		"close":   func(s *Stream, _ *[]int) { require.NoError(t, s.Close()) },
		"event":   func(s *Stream, _ *[]int) { s.RecordEvent() },
	} {
		t.Run(name, func(t *testing.T) {
			s := New()
			defer s.Close()
			var log []int
			st := &starter{p: Started, log: &log, id: 1}
			require.NoError(t, s.EnqueueTask(st))
			s.mu.Lock()
			held := s.held
			s.mu.Unlock()
			require.True(t, held)
			act(s, &log)
			s.mu.Lock()
			held = s.held
			s.mu.Unlock()
			assert.False(t, held, "still held")
			require.Eventually(t, func() bool { return st.ran.Load() == 1 }, 5*time.Second, 100*time.Microsecond)
			require.NoError(t, s.SynchronizeWithin(10*time.Second))
			if name == "enqueue" {
				assert.Equal(t, []int{1, 2}, log)
			}
		})
	}
}

// TestStarterOnBusyStream: Start runs only on an idle stream; behind
// other work the task is Run whole, in order.
func TestStarterOnBusyStream(t *testing.T) {
	s := New()
	defer s.Close()
	release := make(chan struct{})
	var log []int
	require.NoError(t, s.Enqueue(func() error { <-release; log = append(log, 0); return nil }))
	st := &starter{p: Finished, log: &log, id: 1}
	require.NoError(t, s.EnqueueTask(st))
	assert.Zero(t, st.started.Load(), "started behind queued work")
	close(release)
	require.NoError(t, s.SynchronizeWithin(10*time.Second))
	assert.Equal(t, int32(1), st.ran.Load())
	assert.Equal(t, []int{0, 1}, log)
}

// TestStartFailures: an error from Start is the stream's sticky error
// (wrapped as internal if foreign), a panic one too, and later work is
// skipped.
func TestStartFailures(t *testing.T) {
	boom := errors.New("boom")
	for name, st := range map[string]*starter{"error": {p: Started, err: boom}, "panic": {p: Started, panics: true}} {
		t.Run(name, func(t *testing.T) {
			s := New()
			defer s.Close()
			require.NoError(t, s.EnqueueTask(st))
			var later atomic.Bool
			require.NoError(t, s.Enqueue(func() error { later.Store(true); return nil }))
			err := s.SynchronizeWithin(10 * time.Second)
			require.ErrorIs(t, err, gccl.ErrInternal)
			assert.Zero(t, st.ran.Load(), "a failed start is not run")
			assert.False(t, later.Load(), "work after a failure ran")
		})
	}
}

// TestSynchronizeRunsHeldTasksOnly: a started task is held, and the
// Synchronize that reaches it runs it on its own goroutine; a plain task,
// whose waits may outlast the call's deadline, and a Starter that did not
// start run on the worker.
func TestSynchronizeRunsHeldTasksOnly(t *testing.T) {
	s := New()
	defer s.Close()
	var on string
	require.NoError(t, s.Enqueue(func() error { on = goid(); return nil }))
	require.NoError(t, s.SynchronizeWithin(10*time.Second))
	assert.NotEqual(t, goid(), on, "plain task")
	for i := range 40 {
		st := &starter{p: Progress(i % 2)} // NotStarted, Started
		require.NoError(t, s.EnqueueTask(st))
		require.NoError(t, s.SynchronizeWithin(10*time.Second))
		require.Equal(t, int32(1), st.ran.Load())
		assert.Equal(t, st.p == Started, goid() == st.runOn(), "%v: run by this goroutine", st.p)
	}
}

// TestStartersRandomOrder: Starters of every Progress, plain tasks and
// events, enqueued by several goroutines while others synchronize and
// query, each run exactly once, in each enqueuer's order.
func TestStartersRandomOrder(t *testing.T) {
	s := New()
	defer s.Close()
	const enqueuers, each = 4, 300
	var mu sync.Mutex
	seen := make([][]int, enqueuers)
	var wg sync.WaitGroup
	for e := range enqueuers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(e), 9))
			record := func(i int) { mu.Lock(); seen[e] = append(seen[e], i); mu.Unlock() }
			for i := range each {
				switch rng.IntN(5) {
				case 0:
					assert.NoError(t, s.Enqueue(func() error { record(i); return nil }))
				case 1:
					s.RecordEvent()
					assert.NoError(t, s.Enqueue(func() error { record(i); return nil }))
				default:
					p := Progress(rng.IntN(3))
					assert.NoError(t, s.EnqueueTask(&orderStarter{p: p, do: func() { record(i) }}))
				}
				switch rng.IntN(6) {
				case 0:
					assert.NoError(t, s.SynchronizeWithin(10*time.Second))
				case 1:
					_, _ = s.Query()
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, s.SynchronizeWithin(10*time.Second))
	for e, got := range seen {
		require.Len(t, got, each, "enqueuer %d", e)
		for i, v := range got {
			require.Equal(t, i, v, "enqueuer %d: task %d ran out of order", e, i)
		}
	}
}

// orderStarter does its work in Start when that returns Finished, else in
// Run.
type orderStarter struct {
	p  Progress
	do func()
}

func (o *orderStarter) Start() (Progress, error) {
	if o.p == Finished {
		o.do()
	}
	return o.p, nil
}

func (o *orderStarter) Run() error {
	o.do()
	return nil
}
