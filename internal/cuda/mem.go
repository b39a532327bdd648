package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gccl/gccl"
)

// checkSize refuses negative sizes before they reach the driver as huge size_t values.
func checkSize(arg string, n int) error {
	if n < 0 {
		return gccl.Errorf(gccl.InvalidArgument, arg, "size %d is negative; pass a byte count >= 0", n)
	}
	return nil
}

func (d driver) MemGetInfo() (int, int, error) {
	var free, total C.size_t
	err := d.check("cuMemGetInfo", C.gccl_cuMemGetInfo(&free, &total))
	return int(free), int(total), err
}

func (d driver) MemAlloc(size int) (uintptr, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; pass a size > 0", size)
	}
	var p C.CUdeviceptr
	err := d.check("cuMemAlloc", C.gccl_cuMemAlloc(&p, C.size_t(size)))
	return uintptr(p), err
}

func (d driver) MemFree(p uintptr) error {
	return d.check("cuMemFree", C.gccl_cuMemFree(C.CUdeviceptr(p)))
}

func (d driver) MemGetAddressRange(p uintptr) (uintptr, int, error) {
	var base C.CUdeviceptr
	var n C.size_t
	err := d.check("cuMemGetAddressRange", C.gccl_cuMemGetAddressRange(&base, &n, C.CUdeviceptr(p)))
	return uintptr(base), int(n), err
}

func (d driver) MemHostAlloc(size int, flags uint32) (uintptr, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; pass a size > 0", size)
	}
	var p C.uintptr_t
	err := d.check("cuMemHostAlloc", C.gccl_cuMemHostAlloc(&p, C.size_t(size), C.uint(flags)))
	return uintptr(p), err
}

func (d driver) MemFreeHost(p uintptr) error {
	return d.check("cuMemFreeHost", C.gccl_cuMemFreeHost(C.uintptr_t(p)))
}

func (d driver) MemHostRegister(p uintptr, size int, flags uint32) error {
	if err := checkSize("size", size); err != nil {
		return err
	}
	return d.check("cuMemHostRegister", C.gccl_cuMemHostRegister(C.uintptr_t(p), C.size_t(size), C.uint(flags)))
}

func (d driver) MemHostUnregister(p uintptr) error {
	return d.check("cuMemHostUnregister", C.gccl_cuMemHostUnregister(C.uintptr_t(p)))
}

func (d driver) MemHostGetDevicePointer(p uintptr) (uintptr, error) {
	var dp C.CUdeviceptr
	err := d.check("cuMemHostGetDevicePointer", C.gccl_cuMemHostGetDevicePointer(&dp, C.uintptr_t(p), 0))
	return uintptr(dp), err
}

func (d driver) MemsetD8Async(p uintptr, v uint8, n int, s Stream) error {
	if err := checkSize("n", n); err != nil {
		return err
	}
	return d.check("cuMemsetD8Async",
		C.gccl_cuMemsetD8Async(C.CUdeviceptr(p), C.uchar(v), C.size_t(n), C.CUstream(s)))
}

func (d driver) MemsetD32Async(p uintptr, v uint32, n int, s Stream) error {
	if err := checkSize("n", n); err != nil {
		return err
	}
	return d.check("cuMemsetD32Async",
		C.gccl_cuMemsetD32Async(C.CUdeviceptr(p), C.uint(v), C.size_t(n), C.CUstream(s)))
}

func (d driver) MemcpyHtoD(dst uintptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := d.check("cuMemcpyHtoD",
		C.gccl_cuMemcpyHtoD(C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)))); err != nil {
		return err
	}
	// From pageable memory cuMemcpyHtoD returns once the bytes are staged,
	// before the DMA lands; work on a non-blocking stream could read the
	// old contents. Wait for the legacy stream that carries the DMA.
	return d.StreamSynchronize(0)
}

func (d driver) MemcpyDtoH(dst []byte, src uintptr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.check("cuMemcpyDtoH",
		C.gccl_cuMemcpyDtoH(unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))))
}

func (d driver) MemcpyDtoD(dst, src uintptr, n int) error {
	if err := checkSize("n", n); err != nil || n == 0 {
		return err
	}
	if err := d.check("cuMemcpyDtoD", C.gccl_cuMemcpyDtoD(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n))); err != nil {
		return err
	}
	return d.StreamSynchronize(0) // cuMemcpyDtoD may return before the copy is done
}

func (d driver) MemcpyHtoDAsync(dst, src uintptr, n int, s Stream) error {
	if err := checkSize("n", n); err != nil || n == 0 {
		return err
	}
	return d.check("cuMemcpyHtoDAsync",
		C.gccl_cuMemcpyHtoDAsync(C.CUdeviceptr(dst), C.uintptr_t(src), C.size_t(n), C.CUstream(s)))
}

func (d driver) MemcpyDtoHAsync(dst, src uintptr, n int, s Stream) error {
	if err := checkSize("n", n); err != nil || n == 0 {
		return err
	}
	return d.check("cuMemcpyDtoHAsync",
		C.gccl_cuMemcpyDtoHAsync(C.uintptr_t(dst), C.CUdeviceptr(src), C.size_t(n), C.CUstream(s)))
}

func (d driver) MemcpyDtoDAsync(dst, src uintptr, n int, s Stream) error {
	if err := checkSize("n", n); err != nil || n == 0 {
		return err
	}
	return d.check("cuMemcpyDtoDAsync",
		C.gccl_cuMemcpyDtoDAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), C.CUstream(s)))
}

func (d driver) IpcGetMemHandle(p uintptr) (IpcMemHandle, error) {
	var h C.CUipcMemHandle
	var out IpcMemHandle
	err := d.check("cuIpcGetMemHandle", C.gccl_cuIpcGetMemHandle(&h, C.CUdeviceptr(p)))
	for i := range out {
		out[i] = byte(h.reserved[i])
	}
	return out, err
}

func (d driver) IpcOpenMemHandle(h IpcMemHandle, flags uint32) (uintptr, error) {
	var ch C.CUipcMemHandle
	for i := range h {
		ch.reserved[i] = C.char(h[i])
	}
	var p C.CUdeviceptr
	err := d.check("cuIpcOpenMemHandle", C.gccl_cuIpcOpenMemHandle(&p, ch, C.uint(flags)))
	return uintptr(p), err
}

func (d driver) IpcCloseMemHandle(p uintptr) error {
	return d.check("cuIpcCloseMemHandle", C.gccl_cuIpcCloseMemHandle(C.CUdeviceptr(p)))
}

func errAttr(a PointerAttr) error {
	return gccl.Errorf(gccl.InvalidArgument, "attr", "pointer attribute %d is not a scalar this shim can return", a)
}

func (d driver) PointerGetAttribute(attr PointerAttr, p uintptr) (uint64, error) {
	if !attr.fitsSlot() {
		return 0, errAttr(attr)
	}
	var v C.ulonglong
	err := d.check("cuPointerGetAttribute", C.gccl_cuPointerGetAttribute(&v, C.int(attr), C.CUdeviceptr(p)))
	return uint64(v), err
}

func (d driver) PointerGetAttributes(attrs []PointerAttr, p uintptr) ([]uint64, error) {
	if len(attrs) == 0 || len(attrs) > 32 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "attrs", "%d attributes asked; ask for 1 to 32", len(attrs))
	}
	ca := make([]C.int, len(attrs))
	for i, a := range attrs {
		if !a.fitsSlot() {
			return nil, errAttr(a)
		}
		ca[i] = C.int(a)
	}
	slots := make([]C.ulonglong, len(attrs))
	err := d.check("cuPointerGetAttributes",
		C.gccl_pointer_get_attributes(C.uint(len(attrs)), &ca[0], &slots[0], C.CUdeviceptr(p)))
	out := make([]uint64, len(attrs))
	for i, v := range slots {
		out[i] = uint64(v)
	}
	return out, err
}
