package cuda

import (
	"log/slog"
	"sync"
)

// callbacks maps the handles passed to the driver as userData to the Go
// functions they stand for. A once handle is used once (an eager host
// function, a user object's destructor); a lasting one runs every time the
// driver calls it (a host function captured into a graph runs at every
// launch) until takeCallback drops it.
var callbacks = struct {
	sync.Mutex
	next uintptr
	fns  map[uintptr]callback
}{fns: map[uintptr]callback{}}

type callback struct {
	fn   func()
	once bool
}

func registerCallback(fn func(), once bool) uintptr {
	callbacks.Lock()
	defer callbacks.Unlock()
	callbacks.next++
	callbacks.fns[callbacks.next] = callback{fn: fn, once: once}
	return callbacks.next
}

// takeCallback drops h and returns its function (nil if unknown).
func takeCallback(h uintptr) func() {
	callbacks.Lock()
	defer callbacks.Unlock()
	cb := callbacks.fns[h]
	delete(callbacks.fns, h)
	return cb.fn
}

// callbackFor returns h's function, dropping h if it is used once.
func callbackFor(h uintptr) func() {
	callbacks.Lock()
	defer callbacks.Unlock()
	cb := callbacks.fns[h]
	if cb.once {
		delete(callbacks.fns, h)
	}
	return cb.fn
}

// pendingCallbacks is the number of registered callbacks not yet run (for tests).
func pendingCallbacks() int {
	callbacks.Lock()
	defer callbacks.Unlock()
	return len(callbacks.fns)
}

// runCallback runs the function registered under h.
func runCallback(h uintptr) {
	fn := callbackFor(h)
	if fn == nil {
		slog.Error("gccl/cuda: host callback with an unknown handle", "handle", uint64(h))
		return
	}
	defer func() {
		if r := recover(); r != nil {
			slog.Error("gccl/cuda: host callback panicked", "panic", r)
		}
	}()
	fn()
}
