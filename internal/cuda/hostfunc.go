package cuda

/*
#include "shim.h"
*/
import "C"

//export gcclHostCallback
func gcclHostCallback(h C.uintptr_t) { runCallback(uintptr(h)) }

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
