// The MPI calls of package internal/mpi (declared and explained in shim.h).
// This is the only place MPI's constants and handles are named.
#include "shim.h"

#include <stdlib.h>
#include <string.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

int gccl_mpi_success(void) { return MPI_SUCCESS; }

int gccl_mpi_thread_level(int i) {
	switch (i) {
	case 0: return MPI_THREAD_SINGLE;
	case 1: return MPI_THREAD_FUNNELED;
	case 2: return MPI_THREAD_SERIALIZED;
	default: return MPI_THREAD_MULTIPLE;
	}
}

int gccl_mpi_initialized(int *flag) { return MPI_Initialized(flag); }
int gccl_mpi_finalized(int *flag) { return MPI_Finalized(flag); }
int gccl_mpi_query_thread(int *provided) { return MPI_Query_thread(provided); }
int gccl_mpi_is_thread_main(int *flag) { return MPI_Is_thread_main(flag); }

int gccl_mpi_init_thread(int required, int *provided) {
	int e = MPI_Init_thread(NULL, NULL, required, provided);
	if (e != MPI_SUCCESS) return e;
	// We own this MPI: make errors on the world communicator come back as codes.
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

int gccl_mpi_finalize(void) { return MPI_Finalize(); }
int gccl_mpi_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

MPI_Comm *gccl_mpi_comm_alloc(void) { return (MPI_Comm *)malloc(sizeof(MPI_Comm)); }

int gccl_mpi_idup(int how, uintptr_t v, MPI_Comm *out, MPI_Request *req) {
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

int gccl_mpi_comm_ready(MPI_Comm *c, int *rank, int *size) {
	int e = MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
	if (e != MPI_SUCCESS) return e;
	e = MPI_Comm_rank(*c, rank);
	if (e != MPI_SUCCESS) return e;
	return MPI_Comm_size(*c, size);
}

int gccl_mpi_comm_free(MPI_Comm *c) {
	int e = MPI_Comm_free(c);
	free(c);
	return e;
}

int gccl_mpi_c2f(MPI_Comm *c) { return (int)MPI_Comm_c2f(*c); }
uintptr_t gccl_mpi_raw(MPI_Comm *c) { return (uintptr_t)*c; }

int gccl_mpi_split(MPI_Comm *c, int color, int key, MPI_Comm *out, int *none) {
	int e = MPI_Comm_split(*c, color < 0 ? MPI_UNDEFINED : color, key, out);
	*none = e == MPI_SUCCESS && *out == MPI_COMM_NULL;
	return e;
}

int gccl_mpi_appnum(int *appnum, int *flag) {
	int *v = NULL;
	int e = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, flag);
	if (e == MPI_SUCCESS && *flag && v != NULL) *appnum = *v;
	return e;
}

int gccl_mpi_ibcast(MPI_Comm *c, void *buf, int n, int root, MPI_Request *req) {
	return MPI_Ibcast(buf, n, MPI_BYTE, root, *c, req);
}

int gccl_mpi_iallgather(MPI_Comm *c, const void *send, void *recv, int n, MPI_Request *req) {
	return MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, *c, req);
}

int gccl_mpi_ibarrier(MPI_Comm *c, MPI_Request *req) { return MPI_Ibarrier(*c, req); }

int gccl_mpi_isend(MPI_Comm *c, uintptr_t buf, int n, int peer, int tag, MPI_Request *req) {
	return MPI_Isend((const void *)buf, n, MPI_BYTE, peer, tag, *c, req);
}

int gccl_mpi_irecv(MPI_Comm *c, uintptr_t buf, int n, int peer, int tag, MPI_Request *req) {
	return MPI_Irecv((void *)buf, n, MPI_BYTE, peer, tag, *c, req);
}

int gccl_mpi_test(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }

int gccl_mpi_iprobe(MPI_Comm *c, int *flag) {
	return MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, *c, flag, MPI_STATUS_IGNORE);
}

void gccl_mpi_error_string(int code, char *buf, int cap) {
	char tmp[MPI_MAX_ERROR_STRING];
	int n = 0;
	if (MPI_Error_string(code, tmp, &n) != MPI_SUCCESS || n <= 0) {
		n = 0;
	}
	if (n >= cap) n = cap - 1;
	memcpy(buf, tmp, n);
	buf[n] = 0;
}

int gccl_mpi_cuda_aware(void) {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA && defined(MPIX_CUDA_AWARE_SUPPORT)
	return MPIX_Query_cuda_support() ? 1 : 0;
#elif defined(MPICH) && defined(MPIX_GPU_SUPPORT_CUDA)
	int yes = 0;
	if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) != MPI_SUCCESS) return -1;
	return yes ? 1 : 0;
#else
	return -1;
#endif
}

static MPI_Datatype datatype(int t) {
	switch (t) {
	case GCCL_T_INT8: return MPI_INT8_T;
	case GCCL_T_UINT8: return MPI_UINT8_T;
	case GCCL_T_INT32: return MPI_INT32_T;
	case GCCL_T_UINT32: return MPI_UINT32_T;
	case GCCL_T_INT64: return MPI_INT64_T;
	case GCCL_T_UINT64: return MPI_UINT64_T;
	case GCCL_T_FLOAT: return MPI_FLOAT;
	default: return MPI_DOUBLE;
	}
}

static MPI_Op op(int o) {
	switch (o) {
	case GCCL_OP_PROD: return MPI_PROD;
	case GCCL_OP_MAX: return MPI_MAX;
	case GCCL_OP_MIN: return MPI_MIN;
	default: return MPI_SUM;
	}
}

// A zero send address means MPI_IN_PLACE.
static const void *send_buf(uintptr_t p) { return p ? (const void *)p : MPI_IN_PLACE; }

int gccl_mpi_allreduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o) {
	return MPI_Allreduce(send_buf(s), (void *)r, n, datatype(t), op(o), *c);
}

int gccl_mpi_allgather(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t) {
	return MPI_Allgather(send_buf(s), n, datatype(t), (void *)r, n, datatype(t), *c);
}

int gccl_mpi_reduce_scatter_block(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o) {
	return MPI_Reduce_scatter_block(send_buf(s), (void *)r, n, datatype(t), op(o), *c);
}

int gccl_mpi_bcast(MPI_Comm *c, uintptr_t b, int n, int t, int root) {
	return MPI_Bcast((void *)b, n, datatype(t), root, *c);
}

int gccl_mpi_reduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o, int root) {
	return MPI_Reduce(send_buf(s), (void *)r, n, datatype(t), op(o), root, *c);
}

int gccl_mpi_sendrecv(MPI_Comm *c, uintptr_t s, int sn, int dest, uintptr_t r, int rn, int src, int t) {
	return MPI_Sendrecv((const void *)s, sn, datatype(t), dest, 0, (void *)r, rn, datatype(t), src, 0, *c,
		MPI_STATUS_IGNORE);
}

int gccl_mpi_alltoall(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t) {
	return MPI_Alltoall((const void *)s, n, datatype(t), (void *)r, n, datatype(t), *c);
}

int gccl_mpi_halo(MPI_Comm *c, int n, const int *peers, const uintptr_t *sends, const uintptr_t *recvs,
	const int *counts, int t) {
	// Statuses are kept rather than ignored: MPICH's MPI_STATUSES_IGNORE,
	// (MPI_Status *)1, makes gcc warn of an overflow at MPI_Waitall.
	MPI_Request *reqs = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(2 * n + 1));
	MPI_Status *st = (MPI_Status *)malloc(sizeof(MPI_Status) * (size_t)(2 * n + 1));
	if (reqs == NULL || st == NULL) {
		free(reqs);
		free(st);
		return MPI_ERR_NO_MEM;
	}
	int k = 0, e = MPI_SUCCESS;
	for (int i = 0; i < n && e == MPI_SUCCESS; i++) {
		if (peers[i] >= 0) e = MPI_Irecv((void *)recvs[i], counts[i], datatype(t), peers[i], i ^ 1, *c, &reqs[k++]);
	}
	for (int i = 0; i < n && e == MPI_SUCCESS; i++) {
		if (peers[i] >= 0) e = MPI_Isend((const void *)sends[i], counts[i], datatype(t), peers[i], i, *c, &reqs[k++]);
	}
	if (e == MPI_SUCCESS) e = MPI_Waitall(k, reqs, st);
	free(reqs);
	free(st);
	return e;
}
