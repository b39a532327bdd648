package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gccl/gccl"
)

func (d driver) ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "image", "empty module image; build the fatbin (kernels/build.sh)")
	}
	// The image is copied to C memory: the driver may read it during the
	// whole call, and Go memory must not be retained by C.
	cimg := C.CBytes(image)
	defer C.free(cimg)
	var m C.CUmodule
	err := d.check("cuModuleLoadData", C.gccl_cuModuleLoadData(&m, cimg))
	return Module(m), err
}

func (d driver) ModuleUnload(m Module) error {
	return d.check("cuModuleUnload", C.gccl_cuModuleUnload(C.CUmodule(m)))
}

func (d driver) ModuleGetFunction(m Module, name string) (Function, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.CUfunction
	if err := d.check("cuModuleGetFunction", C.gccl_cuModuleGetFunction(&f, C.CUmodule(m), cs)); err != nil {
		return 0, gccl.Errorf(gccl.UnhandledCudaError, "name", "kernel %q not in the module: %w", name, err)
	}
	return Function(f), nil
}

func (d driver) FuncLoad(f Function) error {
	r := C.gccl_cuFuncLoad(C.CUfunction(f))
	if Result(r) == ErrorSymbolMissing {
		return nil // before CUDA 12.4: cuModuleGetFunction loaded it
	}
	return d.check("cuFuncLoad", r)
}

func (d driver) FuncAttribute(attr FuncAttr, f Function) (int, error) {
	var v C.int
	err := d.check("cuFuncGetAttribute", C.gccl_cuFuncGetAttribute(&v, C.int(attr), C.CUfunction(f)))
	return int(v), err
}

func (d driver) CtxLimit(l Limit) (int, error) {
	var v C.size_t
	err := d.check("cuCtxGetLimit", C.gccl_cuCtxGetLimit(&v, C.int(l)))
	return int(v), err
}

func (d driver) CtxSetLimit(l Limit, v int) error {
	if v < 0 {
		return gccl.Errorf(gccl.InvalidArgument, "v", "limit %d is negative", v)
	}
	return d.check("cuCtxSetLimit", C.gccl_cuCtxSetLimit(C.int(l), C.size_t(v)))
}

func (d driver) LaunchKernel(f Function, grid, block Dim3, sharedMem int, s Stream, args *Args) error {
	if err := checkLaunch(f, grid, block, sharedMem, args); err != nil {
		return err
	}
	buf, offs := args.packed()
	n := 0
	if args != nil {
		n = args.Len()
	}
	return d.check("cuLaunchKernel", C.gccl_launch(C.CUfunction(f),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(sharedMem), C.CUstream(s), (*C.uchar)(unsafe.Pointer(&buf[0])), (*C.uint32_t)(unsafe.Pointer(&offs[0])), C.int(n)))
}
