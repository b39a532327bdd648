package cuda

import (
	"log/slog"
	"sync"
)

// callbacks maps the handles passed to the driver as userData to the Go
// functions they stand for. A handle is used once: a host function runs
// once, a user object's destructor runs once.
var callbacks = struct {
	sync.Mutex
	next uintptr
	fns  map[uintptr]func()
}{fns: map[uintptr]func(){}}

func registerCallback(fn func()) uintptr {
	callbacks.Lock()
	defer callbacks.Unlock()
	callbacks.next++
	callbacks.fns[callbacks.next] = fn
	return callbacks.next
}

func takeCallback(h uintptr) func() {
	callbacks.Lock()
	defer callbacks.Unlock()
	fn := callbacks.fns[h]
	delete(callbacks.fns, h)
	return fn
}

// pendingCallbacks is the number of registered callbacks not yet run (for tests).
func pendingCallbacks() int {
	callbacks.Lock()
	defer callbacks.Unlock()
	return len(callbacks.fns)
}

// runCallback runs (once) the function registered under h.
func runCallback(h uintptr) {
	fn := takeCallback(h)
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
