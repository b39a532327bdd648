// The C layer of package internal/mpi: every MPI call gccl makes goes
// through one of these small functions (shim.c). MPI constants and handles
// (MPI_COMM_WORLD, MPI_ANY_SOURCE, MPI_THREAD_*, MPI_BYTE, the datatypes and
// operators) differ between Open MPI and MPICH in type and value, so they
// are only ever named in shim.c; Go sees plain ints, MPI_Comm handles in C
// memory and opaque requests. Every function returns an MPI error code
// (MPI_SUCCESS is gccl_mpi_success()) unless it says otherwise.
#ifndef GCCL_MPI_SHIM_H
#define GCCL_MPI_SHIM_H

#include <stdint.h>
#include <mpi.h>

int gccl_mpi_success(void);

// gccl_mpi_thread_level maps 0..3 to MPI_THREAD_SINGLE..MPI_THREAD_MULTIPLE.
int gccl_mpi_thread_level(int i);

int gccl_mpi_initialized(int *flag);
int gccl_mpi_finalized(int *flag);
int gccl_mpi_query_thread(int *provided);
int gccl_mpi_is_thread_main(int *flag);
// MPI_Init_thread, then MPI_ERRORS_RETURN on MPI_COMM_WORLD.
int gccl_mpi_init_thread(int required, int *provided);
int gccl_mpi_finalize(void);
int gccl_mpi_abort(int code);

// Communicators live in C memory (MPI writes the handle after an idup returns).
MPI_Comm *gccl_mpi_comm_alloc(void);

// Not MPI error codes (those are >= 0): the parent of an idup is unusable.
enum { GCCL_ERR_NULL = -1, GCCL_ERR_INTER = -2 };

// gccl_mpi_idup starts duplicating an application's communicator named by
// how: 0 MPI_COMM_WORLD, 1 a Fortran handle (MPI_Comm_c2f's MPI_Fint), 2 a
// raw MPI_Comm handle (a pointer in Open MPI, an int in MPICH).
int gccl_mpi_idup(int how, uintptr_t v, MPI_Comm *out, MPI_Request *req);
// MPI_ERRORS_RETURN on c, then its rank and size.
int gccl_mpi_comm_ready(MPI_Comm *c, int *rank, int *size);
// MPI_Comm_free, and the C memory of the handle.
int gccl_mpi_comm_free(MPI_Comm *c);
int gccl_mpi_c2f(MPI_Comm *c);        // c's Fortran handle
uintptr_t gccl_mpi_raw(MPI_Comm *c);  // c's raw handle
// MPI_Comm_split; a negative colour is MPI_UNDEFINED, and *none tells that
// this process got MPI_COMM_NULL.
int gccl_mpi_split(MPI_Comm *c, int color, int key, MPI_Comm *out, int *none);
// MPI_APPNUM: which command of an MPMD launch this process runs.
int gccl_mpi_appnum(int *appnum, int *flag);

// Nonblocking calls on bytes; gccl_mpi_test is MPI_Test.
int gccl_mpi_ibcast(MPI_Comm *c, void *buf, int n, int root, MPI_Request *req);
int gccl_mpi_iallgather(MPI_Comm *c, const void *send, void *recv, int n, MPI_Request *req);
int gccl_mpi_ibarrier(MPI_Comm *c, MPI_Request *req);
int gccl_mpi_isend(MPI_Comm *c, uintptr_t buf, int n, int peer, int tag, MPI_Request *req);
int gccl_mpi_irecv(MPI_Comm *c, uintptr_t buf, int n, int peer, int tag, MPI_Request *req);
int gccl_mpi_test(MPI_Request *req, int *flag);
// MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) on c.
int gccl_mpi_iprobe(MPI_Comm *c, int *flag);

// gccl_mpi_error_string writes MPI's text for code into buf (cap bytes,
// NUL-terminated).
void gccl_mpi_error_string(int code, char *buf, int cap);

// gccl_mpi_cuda_aware returns 1 (MPI takes GPU memory), 0 (it does not) or
// -1 (MPI cannot tell): Open MPI's MPIX_Query_cuda_support, MPICH's
// MPIX_GPU_query_support, asked at run time since the library found then
// (the GPU machine's) may differ from the one built against.
int gccl_mpi_cuda_aware(void);

// MPI's own blocking collectives (Collectives) on host buffers. Types and
// operators are numbered as below (and as collectives.go's tables); a zero
// send address means MPI_IN_PLACE.
enum { GCCL_T_INT8, GCCL_T_UINT8, GCCL_T_INT32, GCCL_T_UINT32, GCCL_T_INT64, GCCL_T_UINT64,
	GCCL_T_FLOAT, GCCL_T_DOUBLE };
enum { GCCL_OP_SUM, GCCL_OP_PROD, GCCL_OP_MAX, GCCL_OP_MIN };
int gccl_mpi_allreduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o);
int gccl_mpi_allgather(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t);
int gccl_mpi_reduce_scatter_block(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o);
int gccl_mpi_bcast(MPI_Comm *c, uintptr_t b, int n, int t, int root);
int gccl_mpi_reduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o, int root);
int gccl_mpi_sendrecv(MPI_Comm *c, uintptr_t s, int sn, int dest, uintptr_t r, int rn, int src, int t);
int gccl_mpi_alltoall(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t);
// A hand-written halo step over n faces (pairs: lower then upper neighbour
// per dimension): for every face i with peers[i] >= 0, MPI_Irecv of
// counts[i] elements into recvs[i] from peers[i] with tag i^1 (the face the
// peer sends toward this rank), then MPI_Isend of sends[i] to peers[i] with
// tag i, then MPI_Waitall. If posting fails, the requests already posted
// are left to MPI (the job should be aborted).
int gccl_mpi_halo(MPI_Comm *c, int n, const int *peers, const uintptr_t *sends, const uintptr_t *recvs,
	const int *counts, int t);

#endif
