package nccl

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/gccl/gccl"
)

var (
	once    sync.Once
	lib     *Library
	loadErr error
)

// Load opens libnccl.so.2 (once per process) with dlopen and resolves
// the entry points the baseline uses. With no library it returns an error
// wrapping ErrNoLibrary; with a library older than NCCL 2.7 (no ncclSend) one
// with code gccl.SystemError naming the missing symbol.
func Load() (*Library, error) {
	once.Do(func() { lib, loadErr = load(SOName) })
	return lib, loadErr
}

// load opens the named library as NCCL (tests name missing or foreign
// libraries to exercise the failures).
func load(name string) (*Library, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf [512]C.char
	switch C.gccl_nccl_load(cname, &buf[0], C.int(len(buf))) {
	case 0:
		return newLibrary(shim{})
	case 1:
		return nil, gccl.Errorf(gccl.SystemError, name, "%w; install NCCL 2.x (package libnccl2) or add its directory to LD_LIBRARY_PATH",
			&NotFound{Name: name, Reason: C.GoString(&buf[0])})
	}
	return nil, gccl.Errorf(gccl.SystemError, name, "%s", C.GoString(&buf[0]))
}

// shim is the real binding: calls through the pointers nccl_shim.c
// resolved.
type shim struct{}

var _ binding = shim{}

func (shim) version() (int, Result) {
	var v C.int
	r := C.gccl_ncclGetVersion(&v)
	return int(v), Result(r)
}

func (shim) uniqueID(id *UniqueID) Result {
	var cid C.gccl_ncclUniqueId
	r := C.gccl_ncclGetUniqueId(&cid)
	for i := range id {
		id[i] = byte(cid.internal[i])
	}
	return Result(r)
}

func (shim) initRank(nranks, rank int, id *UniqueID, cfg *config) (uintptr, Result) {
	var cid C.gccl_ncclUniqueId
	for i, b := range id {
		cid.internal[i] = C.char(b)
	}
	var comm C.ncclComm_t
	if cfg == nil {
		r := C.gccl_ncclCommInitRank(&comm, C.int(nranks), cid, C.int(rank))
		return uintptr(comm), Result(r)
	}
	c := C.gccl_ncclConfig{
		size: C.size_t(unsafe.Sizeof(C.gccl_ncclConfig{})), magic: C.GCCL_NCCL_CONFIG_MAGIC,
		version:  21700, // NCCL 2.17: the release whose ncclConfig_t these members complete
		blocking: 0, cgaClusterSize: C.GCCL_NCCL_CONFIG_UNDEF_INT,
		minCTAs: C.GCCL_NCCL_CONFIG_UNDEF_INT, maxCTAs: C.GCCL_NCCL_CONFIG_UNDEF_INT,
	}
	if cfg.blocking {
		c.blocking = 1
	}
	r := C.gccl_ncclCommInitRankConfig(&comm, C.int(nranks), cid, C.int(rank), &c)
	return uintptr(comm), Result(r)
}

func (shim) destroy(comm uintptr) Result {
	return Result(C.gccl_ncclCommDestroy(C.ncclComm_t(comm)))
}

func (shim) abort(comm uintptr) Result {
	return Result(C.gccl_ncclCommAbort(C.ncclComm_t(comm)))
}

func (shim) asyncError(comm uintptr) (Result, Result) {
	var state C.ncclResult_t
	r := C.gccl_ncclCommGetAsyncError(C.ncclComm_t(comm), &state)
	return Result(state), Result(r)
}

func (shim) launch(ops []packed, grouped bool) (int, Result) {
	if len(ops) == 0 {
		return 0, Success
	}
	cops := make([]C.gccl_nccl_op, len(ops))
	for i, o := range ops {
		cops[i] = C.gccl_nccl_op{kind: C.int32_t(o.kind), dtype: C.int32_t(o.dtype), op: C.int32_t(o.op),
			root: C.int32_t(o.root), count: C.uint64_t(o.count), send: C.uintptr_t(o.send),
			recv: C.uintptr_t(o.recv), comm: C.ncclComm_t(o.comm), stream: C.uintptr_t(o.stream)}
	}
	var g, issued C.int
	if grouped {
		g = 1
	}
	r := C.gccl_nccl_launch(&cops[0], C.int(len(cops)), g, &issued)
	return int(issued), Result(r)
}

func (shim) register(comm, p uintptr, size int) (uintptr, Result) {
	var h C.uintptr_t
	r := C.gccl_ncclCommRegister(C.ncclComm_t(comm), C.uintptr_t(p), C.size_t(size), &h)
	return uintptr(h), Result(r)
}

func (shim) deregister(comm, h uintptr) Result {
	return Result(C.gccl_ncclCommDeregister(C.ncclComm_t(comm), C.uintptr_t(h)))
}

func (shim) memAlloc(size int) (uintptr, Result) {
	var p C.uintptr_t
	r := C.gccl_ncclMemAlloc(&p, C.size_t(size))
	return uintptr(p), Result(r)
}

func (shim) memFree(p uintptr) Result {
	return Result(C.gccl_ncclMemFree(C.uintptr_t(p)))
}

func (shim) has(sym string) bool {
	cs := C.CString(sym)
	defer C.free(unsafe.Pointer(cs))
	return C.gccl_nccl_has(cs) != 0
}

func (shim) errorString(r Result) string {
	return C.GoString(C.gccl_ncclGetErrorString(C.ncclResult_t(r)))
}

func (shim) lastError(comm uintptr) string {
	return C.GoString(C.gccl_ncclGetLastError(C.ncclComm_t(comm)))
}
