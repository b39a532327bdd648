package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "nccl_shim.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/gccl/gccl"
)

var (
	ncclOnce sync.Once
	ncclLib  *NCCL
	ncclErr  error
)

// LoadNCCL opens libnccl.so.2 (once per process) with dlopen and resolves
// the entry points the baseline uses. With no library it returns an error
// wrapping ErrNoNCCL; with a library older than NCCL 2.7 (no ncclSend) one
// with code gccl.SystemError naming the missing symbol.
func LoadNCCL() (*NCCL, error) {
	ncclOnce.Do(func() { ncclLib, ncclErr = loadNCCL(NCCLLibrary) })
	return ncclLib, ncclErr
}

// loadNCCL opens the named library as NCCL (tests name missing or foreign
// libraries to exercise the failures).
func loadNCCL(name string) (*NCCL, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf [512]C.char
	switch C.gccl_nccl_load(cname, &buf[0], C.int(len(buf))) {
	case 0:
		return newNCCL(ncclShim{})
	case 1:
		return nil, gccl.Errorf(gccl.SystemError, name, "%w; install NCCL 2.x (package libnccl2) or add its directory to LD_LIBRARY_PATH",
			&NCCLNotFound{Name: name, Reason: C.GoString(&buf[0])})
	}
	return nil, gccl.Errorf(gccl.SystemError, name, "%s", C.GoString(&buf[0]))
}

// ncclShim is the real ncclAPI: calls through the pointers nccl_shim.c
// resolved.
type ncclShim struct{}

var _ ncclAPI = ncclShim{}

func (ncclShim) version() (int, NCCLResult) {
	var v C.int
	r := C.gccl_ncclGetVersion(&v)
	return int(v), NCCLResult(r)
}

func (ncclShim) uniqueID(id *NCCLUniqueID) NCCLResult {
	var cid C.gccl_ncclUniqueId
	r := C.gccl_ncclGetUniqueId(&cid)
	for i := range id {
		id[i] = byte(cid.internal[i])
	}
	return NCCLResult(r)
}

func (ncclShim) initRank(nranks, rank int, id *NCCLUniqueID, cfg *ncclConfig) (uintptr, NCCLResult) {
	var cid C.gccl_ncclUniqueId
	for i, b := range id {
		cid.internal[i] = C.char(b)
	}
	var comm C.ncclComm_t
	if cfg == nil {
		r := C.gccl_ncclCommInitRank(&comm, C.int(nranks), cid, C.int(rank))
		return uintptr(comm), NCCLResult(r)
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
	return uintptr(comm), NCCLResult(r)
}

func (ncclShim) destroy(comm uintptr) NCCLResult {
	return NCCLResult(C.gccl_ncclCommDestroy(C.ncclComm_t(comm)))
}

func (ncclShim) abort(comm uintptr) NCCLResult {
	return NCCLResult(C.gccl_ncclCommAbort(C.ncclComm_t(comm)))
}

func (ncclShim) asyncError(comm uintptr) (NCCLResult, NCCLResult) {
	var state C.ncclResult_t
	r := C.gccl_ncclCommGetAsyncError(C.ncclComm_t(comm), &state)
	return NCCLResult(state), NCCLResult(r)
}

func (ncclShim) launch(ops []ncclPacked, grouped bool) (int, NCCLResult) {
	if len(ops) == 0 {
		return 0, NCCLSuccess
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
	return int(issued), NCCLResult(r)
}

func (ncclShim) register(comm, p uintptr, size int) (uintptr, NCCLResult) {
	var h C.uintptr_t
	r := C.gccl_ncclCommRegister(C.ncclComm_t(comm), C.uintptr_t(p), C.size_t(size), &h)
	return uintptr(h), NCCLResult(r)
}

func (ncclShim) deregister(comm, h uintptr) NCCLResult {
	return NCCLResult(C.gccl_ncclCommDeregister(C.ncclComm_t(comm), C.uintptr_t(h)))
}

func (ncclShim) memAlloc(size int) (uintptr, NCCLResult) {
	var p C.uintptr_t
	r := C.gccl_ncclMemAlloc(&p, C.size_t(size))
	return uintptr(p), NCCLResult(r)
}

func (ncclShim) memFree(p uintptr) NCCLResult {
	return NCCLResult(C.gccl_ncclMemFree(C.uintptr_t(p)))
}

func (ncclShim) has(sym string) bool {
	cs := C.CString(sym)
	defer C.free(unsafe.Pointer(cs))
	return C.gccl_nccl_has(cs) != 0
}

func (ncclShim) errorString(r NCCLResult) string {
	return C.GoString(C.gccl_ncclGetErrorString(C.ncclResult_t(r)))
}

func (ncclShim) lastError(comm uintptr) string {
	return C.GoString(C.gccl_ncclGetLastError(C.ncclComm_t(comm)))
}
