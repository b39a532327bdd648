package cuda

/*
#include "shim.h"
*/
import "C"

import "github.com/gccl/gccl"

func allocProp(dev Device, handles HandleType) C.CUmemAllocationProp {
	var p C.CUmemAllocationProp
	p._type = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	p.requestedHandleTypes = C.int(handles)
	p.location._type = 1 // CU_MEM_LOCATION_TYPE_DEVICE
	p.location.id = C.int(dev)
	return p
}

func (d driver) MemCreate(size int, dev Device, handles HandleType) (MemHandle, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot create %d bytes; pass a granularity multiple > 0", size)
	}
	prop := allocProp(dev, handles)
	var h C.CUmemGenericAllocationHandle
	err := d.check("cuMemCreate", C.gccl_cuMemCreate(&h, C.size_t(size), &prop, 0))
	return MemHandle(h), err
}

func (d driver) MemRelease(h MemHandle) error {
	return d.check("cuMemRelease", C.gccl_cuMemRelease(C.CUmemGenericAllocationHandle(h)))
}

func (d driver) MemAddressReserve(size, align int) (uintptr, error) {
	if size <= 0 || align < 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot reserve %d bytes aligned to %d", size, align)
	}
	var p C.CUdeviceptr
	err := d.check("cuMemAddressReserve", C.gccl_cuMemAddressReserve(&p, C.size_t(size), C.size_t(align), 0, 0))
	return uintptr(p), err
}

func (d driver) MemAddressFree(p uintptr, size int) error {
	return d.check("cuMemAddressFree", C.gccl_cuMemAddressFree(C.CUdeviceptr(p), C.size_t(size)))
}

func (d driver) MemMap(p uintptr, size, offset int, h MemHandle) error {
	if size <= 0 || offset < 0 {
		return gccl.Errorf(gccl.InvalidArgument, "size", "cannot map %d bytes at offset %d", size, offset)
	}
	return d.check("cuMemMap", C.gccl_cuMemMap(C.CUdeviceptr(p), C.size_t(size), C.size_t(offset),
		C.CUmemGenericAllocationHandle(h), 0))
}

func (d driver) MemUnmap(p uintptr, size int) error {
	return d.check("cuMemUnmap", C.gccl_cuMemUnmap(C.CUdeviceptr(p), C.size_t(size)))
}

func (d driver) MemSetAccess(p uintptr, size int, dev Device, access Access) error {
	var desc C.CUmemAccessDesc
	desc.location._type = 1
	desc.location.id = C.int(dev)
	desc.flags = C.int(access)
	return d.check("cuMemSetAccess", C.gccl_cuMemSetAccess(C.CUdeviceptr(p), C.size_t(size), &desc, 1))
}

func (d driver) MemGetAllocationGranularity(dev Device, handles HandleType, recommended bool) (int, error) {
	prop := allocProp(dev, handles)
	opt := C.int(0) // CU_MEM_ALLOC_GRANULARITY_MINIMUM
	if recommended {
		opt = 1
	}
	var g C.size_t
	err := d.check("cuMemGetAllocationGranularity", C.gccl_cuMemGetAllocationGranularity(&g, &prop, opt))
	return int(g), err
}

func (d driver) MemExportToShareableHandle(h MemHandle) (int, error) {
	fd := C.int(-1)
	err := d.check("cuMemExportToShareableHandle",
		C.gccl_cuMemExportToShareableHandle(&fd, C.CUmemGenericAllocationHandle(h), C.int(HandlePosixFD), 0))
	return int(fd), err
}

func (d driver) MemImportFromShareableHandle(fd int) (MemHandle, error) {
	if fd < 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "fd", "invalid file descriptor %d", fd)
	}
	var h C.CUmemGenericAllocationHandle
	err := d.check("cuMemImportFromShareableHandle",
		C.gccl_cuMemImportFromShareableHandle(&h, C.uintptr_t(fd), C.int(HandlePosixFD)))
	return MemHandle(h), err
}

func (d driver) MemRetainAllocationHandle(p uintptr) (MemHandle, error) {
	var h C.CUmemGenericAllocationHandle
	err := d.check("cuMemRetainAllocationHandle", C.gccl_cuMemRetainAllocationHandle(&h, C.uintptr_t(p)))
	return MemHandle(h), err
}
