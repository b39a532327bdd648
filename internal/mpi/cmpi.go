//go:build cgo

package mpi

// The Go half of the C layer: one function per helper of shim.h, with MPI's
// return codes turned into errors and C memory for what MPI keeps using
// after a call returns.

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gccl/gccl"
)

// request is an outstanding nonblocking MPI operation. Its buffers live in C
// memory because MPI keeps using them after the starting call returns.
type request struct {
	req  C.MPI_Request
	bufs []unsafe.Pointer
}

// mpiError turns an MPI return code into nil or a *gccl.Error (SystemError)
// carrying MPI_Error_string's text; call names the MPI function.
func mpiError(code C.int, call string) error {
	if code == C.gccl_mpi_success() {
		return nil
	}
	var buf [512]C.char
	C.gccl_mpi_error_string(code, &buf[0], C.int(len(buf)))
	return gccl.Errorf(gccl.SystemError, call, "MPI error %d: %s", int(code), C.GoString(&buf[0]))
}

func cInitialized() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_mpi_initialized(&f), "MPI_Initialized")
	return f != 0, err
}

func cFinalized() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_mpi_finalized(&f), "MPI_Finalized")
	return f != 0, err
}

// cThreadLevel maps an MPI thread-level constant back to a Level.
func cThreadLevel(v C.int) Level {
	for l := Single; l <= Multiple; l++ {
		if C.gccl_mpi_thread_level(C.int(l)) == v {
			return l
		}
	}
	return Single
}

func cInitThread(required Level) (Level, error) {
	var provided C.int
	err := mpiError(C.gccl_mpi_init_thread(C.gccl_mpi_thread_level(C.int(required)), &provided), "MPI_Init_thread")
	return cThreadLevel(provided), err
}

func cQueryThread() (Level, error) {
	var provided C.int
	err := mpiError(C.gccl_mpi_query_thread(&provided), "MPI_Query_thread")
	return cThreadLevel(provided), err
}

func cIsThreadMain() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_mpi_is_thread_main(&f), "MPI_Is_thread_main")
	return f != 0, err
}

// handle is an MPI communicator in C memory, owned by this package.
type handle = *C.MPI_Comm

// cIdup starts MPI_Comm_idup of the communicator (from, v) into new C memory.
func cIdup(from From, v uintptr) (handle, *request, error) {
	h := C.gccl_mpi_comm_alloc()
	if h == nil {
		return nil, nil, gccl.Errorf(gccl.SystemError, "mpi", "out of memory for an MPI communicator handle")
	}
	r := &request{}
	code := C.gccl_mpi_idup(C.int(from), C.uintptr_t(v), h, &r.req)
	var err error
	switch code {
	case C.GCCL_ERR_NULL:
		err = gccl.Errorf(gccl.InvalidArgument, "comm", "the communicator is MPI_COMM_NULL; pass one this process belongs to")
	case C.GCCL_ERR_INTER:
		err = gccl.Errorf(gccl.InvalidArgument, "comm", "an intercommunicator; gccl needs an intracommunicator (MPI_Intercomm_merge it first)")
	default:
		err = mpiError(code, "MPI_Comm_idup")
	}
	if err != nil {
		C.free(unsafe.Pointer(h))
		return nil, nil, err
	}
	return h, r, nil
}

// cCommReady makes errors on h return codes and reads its rank and size.
func cCommReady(h handle) (rank, size int, err error) {
	var r, s C.int
	err = mpiError(C.gccl_mpi_comm_ready(h, &r, &s), "MPI_Comm_set_errhandler")
	return int(r), int(s), err
}

// cSplit runs MPI_Comm_split (blocking); a nil handle means this process
// passed a negative colour.
func cSplit(h handle, color, key int) (handle, error) {
	out := C.gccl_mpi_comm_alloc()
	if out == nil {
		return nil, gccl.Errorf(gccl.SystemError, "mpi", "out of memory for an MPI communicator handle")
	}
	var none C.int
	err := mpiError(C.gccl_mpi_split(h, C.int(color), C.int(key), out, &none), "MPI_Comm_split")
	if err != nil || none != 0 {
		C.free(unsafe.Pointer(out))
		return nil, err
	}
	return out, nil
}

func cAppnum() (appnum int, ok bool, err error) {
	var v, flag C.int
	err = mpiError(C.gccl_mpi_appnum(&v, &flag), "MPI_Comm_get_attr(MPI_APPNUM)")
	return int(v), flag != 0, err
}

func cFortran(h handle) int    { return int(C.gccl_mpi_c2f(h)) }
func cRaw(h handle) uintptr    { return uintptr(C.gccl_mpi_raw(h)) }
func cCommFree(h handle) error { return mpiError(C.gccl_mpi_comm_free(h), "MPI_Comm_free") }
func cFinalize() error         { return mpiError(C.gccl_mpi_finalize(), "MPI_Finalize") }
func cAbort(code int) error    { return mpiError(C.gccl_mpi_abort(C.int(code)), "MPI_Abort") }

func cIprobe(h handle) (bool, error) {
	var f C.int
	err := mpiError(C.gccl_mpi_iprobe(h, &f), "MPI_Iprobe")
	return f != 0, err
}

// cBytes allocates n bytes of C memory (at least 1) holding a copy of src.
func cBytes(n int, src []byte) unsafe.Pointer {
	p := C.malloc(C.size_t(max(n, 1)))
	copy(unsafe.Slice((*byte)(p), max(n, 1)), src)
	return p
}

func cIbcast(h handle, buf []byte, root int) (*request, error) {
	r := &request{bufs: []unsafe.Pointer{cBytes(len(buf), buf)}}
	err := mpiError(C.gccl_mpi_ibcast(h, r.bufs[0], C.int(len(buf)), C.int(root), &r.req), "MPI_Ibcast")
	return r, r.freeOnError(err)
}

func cIallgather(h handle, send []byte, size int) (*request, error) {
	r := &request{bufs: []unsafe.Pointer{cBytes(len(send), send), cBytes(len(send)*size, nil)}}
	err := mpiError(C.gccl_mpi_iallgather(h, r.bufs[0], r.bufs[1], C.int(len(send)), &r.req), "MPI_Iallgather")
	return r, r.freeOnError(err)
}

func cIbarrier(h handle) (*request, error) {
	r := &request{}
	return r, mpiError(C.gccl_mpi_ibarrier(h, &r.req), "MPI_Ibarrier")
}

// cIsendrecv starts MPI_Isend (send) or MPI_Irecv of n bytes at addr, memory
// the caller keeps alive until the request completes.
func cIsendrecv(h handle, send bool, addr uintptr, n, peer, tag int) (*request, error) {
	r := &request{}
	if send {
		return r, mpiError(C.gccl_mpi_isend(h, C.uintptr_t(addr), C.int(n), C.int(peer), C.int(tag), &r.req), "MPI_Isend")
	}
	return r, mpiError(C.gccl_mpi_irecv(h, C.uintptr_t(addr), C.int(n), C.int(peer), C.int(tag), &r.req), "MPI_Irecv")
}

// test reports whether the request has completed (MPI_Test).
func (r *request) test() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_mpi_test(&r.req, &f), "MPI_Test")
	return f != 0, err
}

// result copies buffer i of a completed request into dst.
func (r *request) result(i int, dst []byte) {
	copy(dst, unsafe.Slice((*byte)(r.bufs[i]), len(dst)))
}

// free releases the buffers of a completed (or never started) request. A
// request that timed out is never freed: MPI may still write to it.
func (r *request) free() {
	for _, p := range r.bufs {
		C.free(p)
	}
	r.bufs = nil
}

func (r *request) freeOnError(err error) error {
	if err != nil {
		r.free()
	}
	return err
}

// cCUDAAware returns 1 (CUDA-aware), 0 (not) or -1 (MPI cannot tell).
func cCUDAAware() int { return int(C.gccl_mpi_cuda_aware()) }
