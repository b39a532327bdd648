//go:build cgo

package mpiboot

// The C boundary: every MPI call gccl makes goes through one of the small C
// helpers below. MPI constants and handles (MPI_COMM_WORLD, MPI_ANY_SOURCE,
// MPI_THREAD_*, MPI_BYTE) differ between Open MPI and MPICH in type and value,
// so they are only ever named in C; Go sees plain ints and opaque requests.

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

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

// Communicators live in C memory (MPI writes the handle after an idup returns).
static MPI_Comm *gccl_comm_alloc(void) { return (MPI_Comm *)malloc(sizeof(MPI_Comm)); }

// Not MPI error codes (those are >= 0): the parent of an idup is unusable.
enum { GCCL_ERR_NULL = -1, GCCL_ERR_INTER = -2 };

// gccl_idup starts duplicating an application's communicator named by how:
// 0 MPI_COMM_WORLD, 1 a Fortran handle (MPI_Comm_c2f's MPI_Fint), 2 a raw
// MPI_Comm handle (a pointer in Open MPI, an int in MPICH).
static int gccl_idup(int how, uintptr_t v, MPI_Comm *out, MPI_Request *req) {
	MPI_Comm parent = MPI_COMM_WORLD;
	if (how == 1) parent = MPI_Comm_f2c((MPI_Fint)v);
	if (how == 2) {
		if (v == 0) return GCCL_ERR_NULL;
		parent = (MPI_Comm)v;
	}
	if (parent == MPI_COMM_NULL) return GCCL_ERR_NULL;
	int inter = 0;
	int e = MPI_Comm_test_inter(parent, &inter);
	if (e != MPI_SUCCESS) return e;
	if (inter) return GCCL_ERR_INTER;
	return MPI_Comm_idup(parent, out, req);
}

static int gccl_c2f(MPI_Comm *c) { return (int)MPI_Comm_c2f(*c); }
static uintptr_t gccl_raw(MPI_Comm *c) { return (uintptr_t)*c; }

static int gccl_comm_ready(MPI_Comm *c, int *rank, int *size) {
	int e = MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
	if (e != MPI_SUCCESS) return e;
	e = MPI_Comm_rank(*c, rank);
	if (e != MPI_SUCCESS) return e;
	return MPI_Comm_size(*c, size);
}

static int gccl_comm_free(MPI_Comm *c) {
	int e = MPI_Comm_free(c);
	free(c);
	return e;
}

// gccl_split is MPI_Comm_split; a negative colour is MPI_UNDEFINED, and
// *none tells that this process got MPI_COMM_NULL.
static int gccl_split(MPI_Comm *c, int color, int key, MPI_Comm *out, int *none) {
	int e = MPI_Comm_split(*c, color < 0 ? MPI_UNDEFINED : color, key, out);
	*none = e == MPI_SUCCESS && *out == MPI_COMM_NULL;
	return e;
}

// gccl_appnum reads MPI_APPNUM: which command of an MPMD launch this process runs.
static int gccl_appnum(int *appnum, int *flag) {
	int *v = NULL;
	int e = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, flag);
	if (e == MPI_SUCCESS && *flag && v != NULL) *appnum = *v;
	return e;
}

static int gccl_ibcast(MPI_Comm *c, void *buf, int n, int root, MPI_Request *req) {
	return MPI_Ibcast(buf, n, MPI_BYTE, root, *c, req);
}

static int gccl_iallgather(MPI_Comm *c, const void *send, void *recv, int n, MPI_Request *req) {
	return MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, *c, req);
}

static int gccl_ibarrier(MPI_Comm *c, MPI_Request *req) { return MPI_Ibarrier(*c, req); }

static int gccl_isend(MPI_Comm *c, uintptr_t buf, int n, int peer, int tag, MPI_Request *req) {
	return MPI_Isend((const void *)buf, n, MPI_BYTE, peer, tag, *c, req);
}

static int gccl_irecv(MPI_Comm *c, uintptr_t buf, int n, int peer, int tag, MPI_Request *req) {
	return MPI_Irecv((void *)buf, n, MPI_BYTE, peer, tag, *c, req);
}

static int gccl_test(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }

static int gccl_iprobe(MPI_Comm *c, int *flag) {
	return MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, *c, flag, MPI_STATUS_IGNORE);
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

// handle is an MPI communicator in C memory, owned by mpiboot.
type handle = *C.MPI_Comm

// cIdup starts MPI_Comm_idup of the communicator (how, v) into new C memory.
func cIdup(how int, v uintptr) (handle, *request, error) {
	h := C.gccl_comm_alloc()
	if h == nil {
		return nil, nil, gccl.Errorf(gccl.SystemError, "mpi", "out of memory for an MPI communicator handle")
	}
	r := &request{}
	code := C.gccl_idup(C.int(how), C.uintptr_t(v), h, &r.req)
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
	err = mpiError(C.gccl_comm_ready(h, &r, &s), "MPI_Comm_set_errhandler")
	return int(r), int(s), err
}

// cSplit runs MPI_Comm_split (blocking); a nil handle means this process
// passed a negative colour.
func cSplit(h handle, color, key int) (handle, error) {
	out := C.gccl_comm_alloc()
	if out == nil {
		return nil, gccl.Errorf(gccl.SystemError, "mpi", "out of memory for an MPI communicator handle")
	}
	var none C.int
	err := mpiError(C.gccl_split(h, C.int(color), C.int(key), out, &none), "MPI_Comm_split")
	if err != nil || none != 0 {
		C.free(unsafe.Pointer(out))
		return nil, err
	}
	return out, nil
}

func cAppnum() (appnum int, ok bool, err error) {
	var v, flag C.int
	err = mpiError(C.gccl_appnum(&v, &flag), "MPI_Comm_get_attr(MPI_APPNUM)")
	return int(v), flag != 0, err
}

func cFortran(h handle) int    { return int(C.gccl_c2f(h)) }
func cRaw(h handle) uintptr    { return uintptr(C.gccl_raw(h)) }
func cCommFree(h handle) error { return mpiError(C.gccl_comm_free(h), "MPI_Comm_free") }
func cFinalize() error         { return mpiError(C.gccl_finalize(), "MPI_Finalize") }
func cAbort(code int) error    { return mpiError(C.gccl_abort(C.int(code)), "MPI_Abort") }

func cIprobe(h handle) (bool, error) {
	var f C.int
	err := mpiError(C.gccl_iprobe(h, &f), "MPI_Iprobe")
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
	err := mpiError(C.gccl_ibcast(h, r.bufs[0], C.int(len(buf)), C.int(root), &r.req), "MPI_Ibcast")
	return r, r.freeOnError(err)
}

func cIallgather(h handle, send []byte, size int) (*request, error) {
	r := &request{bufs: []unsafe.Pointer{cBytes(len(send), send), cBytes(len(send)*size, nil)}}
	err := mpiError(C.gccl_iallgather(h, r.bufs[0], r.bufs[1], C.int(len(send)), &r.req), "MPI_Iallgather")
	return r, r.freeOnError(err)
}

func cIbarrier(h handle) (*request, error) {
	r := &request{}
	return r, mpiError(C.gccl_ibarrier(h, &r.req), "MPI_Ibarrier")
}

// cIsendrecv starts MPI_Isend (send) or MPI_Irecv of n bytes at addr, memory
// the caller keeps alive until the request completes.
func cIsendrecv(h handle, send bool, addr uintptr, n, peer, tag int) (*request, error) {
	r := &request{}
	if send {
		return r, mpiError(C.gccl_isend(h, C.uintptr_t(addr), C.int(n), C.int(peer), C.int(tag), &r.req), "MPI_Isend")
	}
	return r, mpiError(C.gccl_irecv(h, C.uintptr_t(addr), C.int(n), C.int(peer), C.int(tag), &r.req), "MPI_Irecv")
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
