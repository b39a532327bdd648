package hoststream

import (
	"fmt"
	"time"

	"github.com/gccl/gccl"
)

// Starter is a Task that may run on the goroutines that need it done
// rather than on the stream's worker: enqueued onto an idle stream
// (nothing queued or running), it starts on the enqueuing goroutine, and
// if it started but is not finished, the Synchronize that reaches it
// finishes it. A launch and its synchronisation then cost no hand-off to
// the worker and back, and no goroutine wake-up: the host backend's
// small-message path.
type Starter interface {
	Task
	// Start runs, on the goroutine that enqueues the task onto an idle
	// stream, what of the task waits for nothing, and says how far it
	// got. Run does the rest unless it returns Finished or an error.
	Start() (Progress, error)
}

// Progress is how far Starter.Start got.
type Progress uint8

const (
	// NotStarted: nothing was done; the task runs as any other, on the
	// worker.
	NotStarted Progress = iota
	// Started: what others wait for is done (the host backend: the
	// launch's sends); the rest only waits (for peers' messages). The task
	// is held for a Synchronize to finish it on its own goroutine; the
	// worker takes it when more work is enqueued, on Query, Release or
	// Close, or once it has been held for a whole watchEvery.
	Started
	// Finished: the task is done; Run is not called.
	Finished
)

var progressNames = [...]string{"NotStarted", "Started", "Finished"}

func (p Progress) String() string {
	if int(p) < len(progressNames) {
		return progressNames[p]
	}
	return fmt.Sprintf("Progress(%d)", p)
}

// watchEvery is how often the worker looks at a stream whose tasks are
// being held (awaitWork): a task held for between one and two of them
// goes to the worker. A caller that synchronizes at once (a launch, then
// Synchronize) runs its task itself; one that goes on computing has its
// receives run by the worker meanwhile, a little later than with no
// holding, which only matters to a peer whose sends wait for room in this
// rank's buffers. The worker wakes no more often than this while tasks
// are held, and not at all for each launch.
const watchEvery = time.Millisecond

// start enqueues st: onto an idle stream (nothing queued or running, no
// failure) it runs st.Start on this goroutine in st's place in the
// order, then ends st or holds it for a Synchronize (Progress); otherwise
// st is pushed as any task.
func (s *Stream) start(st Starter) error {
	s.mu.Lock()
	if s.closed || s.head < len(s.queue) || s.busy || s.err != nil {
		s.mu.Unlock()
		return s.push(task{run: st})
	}
	s.queue = append(s.queue, task{run: st})
	s.enqueued.Add(1)
	s.busy = true
	s.mu.Unlock()

	p, err := startTask(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case p == Finished || err != nil:
		s.end(err)
	case p == Started && s.head+1 == len(s.queue) && !s.closed:
		s.hold()
	default: // not started, or work came meanwhile, or Close
		s.busy = false
		s.wakeWorker()
	}
	return nil
}

// hold leaves queue[head], which is started, for a Synchronize, and has
// the worker watch it (s.mu held).
func (s *Stream) hold() {
	s.busy, s.held = false, true
	s.holds++
	switch {
	case !s.running:
		s.running, s.watch = true, true
		go s.work()
	case !s.watch:
		s.watch = true
		if s.parked {
			s.unpark() // it parks again, watching
		}
	}
}

// Release gives a task held for a Synchronize to the worker now. Query
// and Close do too: nobody may be about to synchronize.
func (s *Stream) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.wakeWorker()
	}
}

// startTask runs st.Start, turning a panic into a finished task's error
// and an error that is not a *gccl.Error into one, as runTask.
func startTask(st Starter) (p Progress, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = Finished, gccl.Errorf(gccl.InternalError, "stream task", "task panicked: %v", r)
		}
	}()
	p, err = st.Start()
	return p, typed(err)
}

// help runs, on the calling goroutine, the tasks up to the target-th
// that are held for a Synchronize, and events, while no other goroutine
// runs one, and gives the worker what is left once it stops. Other tasks
// are the worker's, which push woke for them: running them here too would
// only race it.
func (s *Stream) help(target uint64) {
	ran := false
	s.mu.Lock()
	for s.finished.Load() < target && s.head < len(s.queue) && !s.busy && (s.held || s.queue[s.head].run == nil) {
		t, failed := s.take()
		s.mu.Unlock()
		s.finish(t, failed)
		ran = true
		s.mu.Lock()
	}
	if ran && s.ready() {
		s.wakeWorker() // it parked while this goroutine ran a task
	}
	s.mu.Unlock()
}
