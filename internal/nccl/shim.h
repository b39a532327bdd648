// Our own declarations of the subset of NCCL's C API that gccl-perf's NCCL
// baseline calls. This is not nccl.h: it declares only what we use, so the
// package builds with no NCCL and no CUDA toolkit; libnccl.so.2 is opened
// with dlopen when the baseline starts, and every symbol found with dlsym.
//
// As in shim.h, pointers that Go holds as uintptr (device buffers, the
// ncclComm_t handle, cudaStream_t, registration handles) are declared
// uintptr_t: on the LP64 ABIs we build for, a pointer and a uintptr_t are
// passed and returned identically.
#ifndef GCCL_NCCL_SHIM_H
#define GCCL_NCCL_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef int ncclResult_t;     // ncclSuccess = 0 ... ncclInProgress = 7, ncclTimeout = 8
typedef uintptr_t ncclComm_t; // struct ncclComm *
typedef int ncclDataType_t;   // ncclInt8 = 0 ... ncclFloat8e5m2 = 11
typedef int ncclRedOp_t;      // ncclSum = 0 ... ncclAvg = 4

#define GCCL_NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[GCCL_NCCL_UNIQUE_ID_BYTES]; } gccl_ncclUniqueId;

// The leading members of ncclConfig_t, which NCCL has only ever appended
// to. NCCL copies min(size, its own sizeof) bytes from the caller, so a
// shorter struct leaves every later member at its default.
typedef struct {
	size_t size;
	unsigned int magic;   // NCCL_API_MAGIC, 0xcafebeef
	unsigned int version; // the NCCL_VERSION code the struct was written for
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	uintptr_t netName; // const char *; 0 = NCCL chooses
} gccl_ncclConfig;

#define GCCL_NCCL_CONFIG_MAGIC 0xcafebeefu
#define GCCL_NCCL_CONFIG_UNDEF_INT (-2147483647 - 1) // INT_MIN

// Results the shim makes up itself (outside NCCL's range).
#define GCCL_NCCL_SYMBOL_MISSING 0x7ff00002
#define GCCL_NCCL_BAD_OP 0x7ff00003

// GCCL_NCCL_FUNCS lists every entry point returning ncclResult_t:
// X(symbol, required, (parameters), (arguments)). A library lacking a
// required symbol is refused at load; an optional one (newer than NCCL 2.7)
// makes its wrapper return GCCL_NCCL_SYMBOL_MISSING.
#define GCCL_NCCL_FUNCS(X) \
	X(ncclGetVersion, 1, (int *v), (v)) \
	X(ncclGetUniqueId, 1, (gccl_ncclUniqueId *id), (id)) \
	X(ncclCommInitRank, 1, (ncclComm_t *c, int n, gccl_ncclUniqueId id, int r), (c, n, id, r)) \
	X(ncclCommInitRankConfig, 0, (ncclComm_t *c, int n, gccl_ncclUniqueId id, int r, gccl_ncclConfig *cfg), \
	  (c, n, id, r, cfg)) \
	X(ncclCommDestroy, 1, (ncclComm_t c), (c)) \
	X(ncclCommAbort, 1, (ncclComm_t c), (c)) \
	X(ncclCommGetAsyncError, 1, (ncclComm_t c, ncclResult_t *e), (c, e)) \
	X(ncclAllReduce, 1, (uintptr_t s, uintptr_t r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, \
	  uintptr_t st), (s, r, n, t, o, c, st)) \
	X(ncclBroadcast, 1, (uintptr_t s, uintptr_t r, size_t n, ncclDataType_t t, int root, ncclComm_t c, \
	  uintptr_t st), (s, r, n, t, root, c, st)) \
	X(ncclReduce, 1, (uintptr_t s, uintptr_t r, size_t n, ncclDataType_t t, ncclRedOp_t o, int root, \
	  ncclComm_t c, uintptr_t st), (s, r, n, t, o, root, c, st)) \
	X(ncclAllGather, 1, (uintptr_t s, uintptr_t r, size_t n, ncclDataType_t t, ncclComm_t c, uintptr_t st), \
	  (s, r, n, t, c, st)) \
	X(ncclReduceScatter, 1, (uintptr_t s, uintptr_t r, size_t n, ncclDataType_t t, ncclRedOp_t o, \
	  ncclComm_t c, uintptr_t st), (s, r, n, t, o, c, st)) \
	X(ncclSend, 1, (uintptr_t s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, uintptr_t st), \
	  (s, n, t, peer, c, st)) \
	X(ncclRecv, 1, (uintptr_t r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, uintptr_t st), \
	  (r, n, t, peer, c, st)) \
	X(ncclGroupStart, 1, (void), ()) \
	X(ncclGroupEnd, 1, (void), ()) \
	X(ncclCommRegister, 0, (ncclComm_t c, uintptr_t p, size_t n, uintptr_t *h), (c, p, n, h)) \
	X(ncclCommDeregister, 0, (ncclComm_t c, uintptr_t h), (c, h)) \
	X(ncclMemAlloc, 0, (uintptr_t *p, size_t n), (p, n)) \
	X(ncclMemFree, 0, (uintptr_t p), (p))

#define GCCL_NCCL_PROTO(sym, req, params, args) ncclResult_t gccl_##sym params;
GCCL_NCCL_FUNCS(GCCL_NCCL_PROTO)
#undef GCCL_NCCL_PROTO

// ncclGetErrorString (required) and ncclGetLastError (NCCL 2.13+); both
// return "" when the library or the symbol is missing.
const char *gccl_ncclGetErrorString(ncclResult_t r);
const char *gccl_ncclGetLastError(ncclComm_t c);

// gccl_nccl_load opens the library name (libnccl.so.2) and resolves every
// symbol. It returns 0 on success; 1 when dlopen fails, 2 when the library
// lacks a required symbol, with a message in err (size errlen). A failed
// load leaves a library loaded before it in place.
int gccl_nccl_load(const char *name, char *err, int errlen);

// gccl_nccl_has reports whether sym was resolved (1) or not (0).
int gccl_nccl_has(const char *sym);

// One operation as Go packs it; kind is one of GCCL_NCCL_OP_*.
enum {
	GCCL_NCCL_OP_ALLREDUCE = 0,
	GCCL_NCCL_OP_BROADCAST = 1,
	GCCL_NCCL_OP_REDUCE = 2,
	GCCL_NCCL_OP_ALLGATHER = 3,
	GCCL_NCCL_OP_REDUCESCATTER = 4,
	GCCL_NCCL_OP_SEND = 5,
	GCCL_NCCL_OP_RECV = 6,
};

typedef struct {
	int32_t kind;
	int32_t dtype;
	int32_t op;
	int32_t root; // root of broadcast and reduce, peer of send and recv
	uint64_t count;
	uintptr_t send;
	uintptr_t recv;
	ncclComm_t comm;
	uintptr_t stream;
} gccl_nccl_op;

// gccl_nccl_launch issues n operations, between ncclGroupStart and
// ncclGroupEnd when grouped. It stops at the first failure and returns it;
// an open group is then still ended. *issued is how many calls succeeded.
ncclResult_t gccl_nccl_launch(const gccl_nccl_op *ops, int n, int grouped, int *issued);

#endif
