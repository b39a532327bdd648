package cuda

/*
#include "shim.h"
*/
import "C"

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

//export gcclHostCallback
func gcclHostCallback(h C.uintptr_t) { runCallback(uintptr(h)) }

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

func (d driver) LaunchHostFunc(s Stream, fn func()) error {
	h := registerCallback(fn)
	err := d.check("cuLaunchHostFunc", C.gccl_launch_host_func(C.CUstream(s), C.uintptr_t(h)))
	if err != nil {
		takeCallback(h)
	}
	return err
}

func (d driver) UserObjectCreate(fn func()) (UserObject, error) {
	h := registerCallback(fn)
	var o C.CUuserObject
	err := d.check("cuUserObjectCreate", C.gccl_user_object_create(&o, C.uintptr_t(h)))
	if err != nil {
		takeCallback(h)
	}
	return UserObject(o), err
}

func (d driver) UserObjectRelease(o UserObject, count int) error {
	if count <= 0 {
		return errCount(count)
	}
	return d.check("cuUserObjectRelease", C.gccl_cuUserObjectRelease(C.CUuserObject(o), C.uint(count)))
}

func (d driver) GraphRetainUserObject(g Graph, o UserObject, count int, move bool) error {
	if count <= 0 {
		return errCount(count)
	}
	var flags C.uint
	if move {
		flags = 1 // CU_GRAPH_USER_OBJECT_MOVE
	}
	return d.check("cuGraphRetainUserObject",
		C.gccl_cuGraphRetainUserObject(C.CUgraph(g), C.CUuserObject(o), C.uint(count), flags))
}
