package cuda

/*
#include "shim.h"
*/
import "C"

//export gcclHostCallback
func gcclHostCallback(h C.uintptr_t) { runCallback(uintptr(h)) }

// LaunchHostFunc enqueues fn. On a stream being captured the host node runs
// at every launch of the graph, so fn's handle then lives until the graph
// and its executables are destroyed (a user object the graph owns drops
// it); otherwise it runs once.
func (d driver) LaunchHostFunc(s Stream, fn func()) error {
	info, err := d.StreamGetCaptureInfo(s)
	if err != nil {
		return err
	}
	captured := info.Status == CaptureActive
	h := registerCallback(fn, !captured)
	if captured {
		if err := RetainByGraph(d, info.Graph, func() { takeCallback(h) }); err != nil {
			takeCallback(h)
			return err
		}
	}
	err = d.check("cuLaunchHostFunc", C.gccl_launch_host_func(C.CUstream(s), C.uintptr_t(h)))
	if err != nil && !captured {
		takeCallback(h)
	}
	return err
}

func (d driver) UserObjectCreate(fn func()) (UserObject, error) {
	h := registerCallback(fn, true)
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
