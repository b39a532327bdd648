//go:build cgo

package mpiboot

// The C boundary: every MPI call gccl makes goes through one of the small C
// helpers below. MPI constants and handles (MPI_COMM_WORLD, MPI_ANY_SOURCE,
// MPI_THREAD_*, MPI_BYTE) differ between Open MPI and MPICH in type and value,
// so they are only ever named in C; Go sees plain ints and opaque requests.

/*
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

static MPI_Comm gccl_comm;      // mpiboot's private duplicate of MPI_COMM_WORLD
static int gccl_comm_valid = 0;

static int gccl_success(void) { return MPI_SUCCESS; }

static int gccl_thread_level(int i) {
	switch (i) {
	case 0: return MPI_THREAD_SINGLE;
	case 1: return MPI_THREAD_FUNNELED;
	case 2: return MPI_THREAD_SERIALIZED;
	default: return MPI_THREAD_MULTIPLE;
	}
}

static int gccl_initialized(int *flag) { return MPI_Initialized(flag); }
static int gccl_finalized(int *flag) { return MPI_Finalized(flag); }
static int gccl_query_thread(int *provided) { return MPI_Query_thread(provided); }
static int gccl_is_thread_main(int *flag) { return MPI_Is_thread_main(flag); }

static int gccl_init_thread(int required, int *provided) {
	int e = MPI_Init_thread(NULL, NULL, required, provided);
	if (e != MPI_SUCCESS) return e;
	// We own this MPI: make errors on the world communicator come back as codes.
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static int gccl_idup(MPI_Request *req) { return MPI_Comm_idup(MPI_COMM_WORLD, &gccl_comm, req); }

static int gccl_comm_ready(int *rank, int *size) {
	int e = MPI_Comm_set_errhandler(gccl_comm, MPI_ERRORS_RETURN);
	if (e != MPI_SUCCESS) return e;
	gccl_comm_valid = 1;
	e = MPI_Comm_rank(gccl_comm, rank);
	if (e != MPI_SUCCESS) return e;
	return MPI_Comm_size(gccl_comm, size);
}

static int gccl_comm_free(void) {
	if (!gccl_comm_valid) return MPI_SUCCESS;
	gccl_comm_valid = 0;
	return MPI_Comm_free(&gccl_comm);
}

static int gccl_ibcast(void *buf, int n, int root, MPI_Request *req) {
	return MPI_Ibcast(buf, n, MPI_BYTE, root, gccl_comm, req);
}

static int gccl_iallgather(const void *send, void *recv, int n, MPI_Request *req) {
	return MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, gccl_comm, req);
}

static int gccl_ibarrier(MPI_Request *req) { return MPI_Ibarrier(gccl_comm, req); }

static int gccl_test(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }

static int gccl_iprobe(int *flag) {
	return MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, gccl_comm, flag, MPI_STATUS_IGNORE);
}

static int gccl_finalize(void) { return MPI_Finalize(); }

static int gccl_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

// gccl_error_string writes MPI's text for code into buf (cap bytes, NUL-terminated).
static void gccl_error_string(int code, char *buf, int cap) {
	char tmp[MPI_MAX_ERROR_STRING];
	int n = 0;
	if (MPI_Error_string(code, tmp, &n) != MPI_SUCCESS || n <= 0) {
		n = 0;
	}
	if (n >= cap) n = cap - 1;
	memcpy(buf, tmp, n);
	buf[n] = 0;
}
*/
import "C"

import (
	"math"
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
	if code == C.gccl_success() {
		return nil
	}
	var buf [512]C.char
	C.gccl_error_string(code, &buf[0], C.int(len(buf)))
	return gccl.Errorf(gccl.SystemError, call, "MPI error %d: %s", int(code), C.GoString(&buf[0]))
}

func cInitialized() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_initialized(&f), "MPI_Initialized")
	return f != 0, err
}

func cFinalized() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_finalized(&f), "MPI_Finalized")
	return f != 0, err
}

// cThreadLevel maps an MPI thread-level constant back to a ThreadLevel.
func cThreadLevel(v C.int) ThreadLevel {
	for l := Single; l <= Multiple; l++ {
		if C.gccl_thread_level(C.int(l)) == v {
			return l
		}
	}
	return Single
}

func cInitThread(required ThreadLevel) (ThreadLevel, error) {
	var provided C.int
	err := mpiError(C.gccl_init_thread(C.gccl_thread_level(C.int(required)), &provided), "MPI_Init_thread")
	return cThreadLevel(provided), err
}

func cQueryThread() (ThreadLevel, error) {
	var provided C.int
	err := mpiError(C.gccl_query_thread(&provided), "MPI_Query_thread")
	return cThreadLevel(provided), err
}

func cIsThreadMain() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_is_thread_main(&f), "MPI_Is_thread_main")
	return f != 0, err
}

func cIdup() (*request, error) {
	r := &request{}
	return r, mpiError(C.gccl_idup(&r.req), "MPI_Comm_idup")
}

func cCommReady() (rank, size int, err error) {
	var r, s C.int
	err = mpiError(C.gccl_comm_ready(&r, &s), "MPI_Comm_set_errhandler")
	return int(r), int(s), err
}

func cCommFree() error      { return mpiError(C.gccl_comm_free(), "MPI_Comm_free") }
func cFinalize() error      { return mpiError(C.gccl_finalize(), "MPI_Finalize") }
func cAbort(code int) error { return mpiError(C.gccl_abort(C.int(code)), "MPI_Abort") }

func cIprobe() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_iprobe(&f), "MPI_Iprobe")
	return f != 0, err
}

// cBytes allocates n bytes of C memory (at least 1) holding a copy of src.
func cBytes(n int, src []byte) unsafe.Pointer {
	p := C.malloc(C.size_t(max(n, 1)))
	copy(unsafe.Slice((*byte)(p), max(n, 1)), src)
	return p
}

func cIbcast(buf []byte, root int) (*request, error) {
	r := &request{bufs: []unsafe.Pointer{cBytes(len(buf), buf)}}
	err := mpiError(C.gccl_ibcast(r.bufs[0], C.int(len(buf)), C.int(root), &r.req), "MPI_Ibcast")
	return r, r.freeOnError(err)
}

func cIallgather(send []byte, size int) (*request, error) {
	r := &request{bufs: []unsafe.Pointer{cBytes(len(send), send), cBytes(len(send)*size, nil)}}
	err := mpiError(C.gccl_iallgather(r.bufs[0], r.bufs[1], C.int(len(send)), &r.req), "MPI_Iallgather")
	return r, r.freeOnError(err)
}

func cIbarrier() (*request, error) {
	r := &request{}
	return r, mpiError(C.gccl_ibarrier(&r.req), "MPI_Ibarrier")
}

// test reports whether the request has completed (MPI_Test).
func (r *request) test() (bool, error) {
	var f C.int
	err := mpiError(C.gccl_test(&r.req, &f), "MPI_Test")
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

// maxCount is the largest byte count one MPI call takes (an int).
const maxCount = math.MaxInt32
