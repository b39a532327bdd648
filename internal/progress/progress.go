package progress

import (
	"sync"
	"time"
)

// Interval is the pause between two calls of the hook while gccl waits: the
// bound on how often it runs (at most 1/Interval calls per second).
const Interval = 200 * time.Microsecond

// Hook is called while gccl waits; blocking is true when at least one
// application call is waiting inside gccl (see Enter).
type Hook func(blocking bool)

// state is the process's progress state: one hook, counts of the waits
// under way, and whether the driver goroutine runs.
type state struct {
	mu       sync.Mutex
	hook     Hook
	gen      uint64 // bumped by every Install, so a stale remove is a no-op
	blocking int
	waits    int
	running  bool
}

var st state

// Install makes h the hook and returns the function that removes it. A
// later Install replaces it; the replaced hook's remove then does nothing.
// A call of h already under way when it is removed runs to its end.
func Install(h Hook) (remove func()) {
	st.mu.Lock()
	st.gen++
	gen := st.gen
	st.hook = h
	st.startLocked()
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		if st.gen == gen {
			st.hook = nil
		}
		st.mu.Unlock()
	}
}

// Enter marks the start of a wait; the returned function marks its end
// (a second call does nothing). blocking says an application call is
// waiting (see the package documentation).
func Enter(blocking bool) (leave func()) {
	Begin(blocking)
	var once sync.Once
	return func() { once.Do(func() { End(blocking) }) }
}

// Begin is Enter without the function to call at the end, and allocates
// nothing (host streams call it around every task): call End(blocking)
// exactly once after it.
func Begin(blocking bool) {
	st.mu.Lock()
	st.waits++
	if blocking {
		st.blocking++
	}
	st.startLocked()
	st.mu.Unlock()
}

// End marks the end of a wait that Begin started.
func End(blocking bool) {
	st.mu.Lock()
	st.waits--
	if blocking {
		st.blocking--
	}
	st.mu.Unlock()
}

// startLocked starts the driver when there is a hook and a wait and none runs.
func (s *state) startLocked() {
	if s.running || s.hook == nil || s.waits == 0 {
		return
	}
	s.running = true
	go s.drive()
}

// drive calls the hook every Interval until no wait is under way or the
// hook is removed.
func (s *state) drive() {
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		s.mu.Lock()
		h, blocking := s.hook, s.blocking > 0
		if h == nil || s.waits == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		h(blocking)
		<-t.C
	}
}
