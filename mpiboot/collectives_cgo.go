//go:build cgo

package mpiboot

// The C half of Collectives: the MPI calls, with the types and operators
// mapped to MPI's in C, never by constant value.

/*
#include <stdint.h>
#include <stdlib.h>
#include <mpi.h>

enum { GCCL_T_INT8, GCCL_T_UINT8, GCCL_T_INT32, GCCL_T_UINT32, GCCL_T_INT64, GCCL_T_UINT64,
	GCCL_T_FLOAT, GCCL_T_DOUBLE };
enum { GCCL_OP_SUM, GCCL_OP_PROD, GCCL_OP_MAX, GCCL_OP_MIN };

static MPI_Datatype gccl_mpi_type(int t) {
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

static MPI_Op gccl_mpi_op(int o) {
	switch (o) {
	case GCCL_OP_PROD: return MPI_PROD;
	case GCCL_OP_MAX: return MPI_MAX;
	case GCCL_OP_MIN: return MPI_MIN;
	default: return MPI_SUM;
	}
}

// A zero send address means MPI_IN_PLACE.
static const void *gccl_send(uintptr_t p) { return p ? (const void *)p : MPI_IN_PLACE; }

static MPI_Comm *gccl_coll_new(void) { return (MPI_Comm *)malloc(sizeof(MPI_Comm)); }

static int gccl_coll_idup(MPI_Comm *c, MPI_Request *req) { return MPI_Comm_idup(MPI_COMM_WORLD, c, req); }

static int gccl_coll_ready(MPI_Comm *c) { return MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN); }

static int gccl_coll_free(MPI_Comm *c) {
	int e = MPI_Comm_free(c);
	free(c);
	return e;
}

static int gccl_allreduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o) {
	return MPI_Allreduce(gccl_send(s), (void *)r, n, gccl_mpi_type(t), gccl_mpi_op(o), *c);
}

static int gccl_allgather(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t) {
	MPI_Datatype dt = gccl_mpi_type(t);
	return MPI_Allgather(gccl_send(s), n, dt, (void *)r, n, dt, *c);
}

static int gccl_reduce_scatter_block(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o) {
	return MPI_Reduce_scatter_block(gccl_send(s), (void *)r, n, gccl_mpi_type(t), gccl_mpi_op(o), *c);
}

static int gccl_bcast(MPI_Comm *c, uintptr_t b, int n, int t, int root) {
	return MPI_Bcast((void *)b, n, gccl_mpi_type(t), root, *c);
}

static int gccl_reduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o, int root) {
	return MPI_Reduce(gccl_send(s), (void *)r, n, gccl_mpi_type(t), gccl_mpi_op(o), root, *c);
}

static int gccl_sendrecv(MPI_Comm *c, uintptr_t s, int sn, int dest, uintptr_t r, int rn, int src, int t) {
	MPI_Datatype dt = gccl_mpi_type(t);
	return MPI_Sendrecv((const void *)s, sn, dt, dest, 0, (void *)r, rn, dt, src, 0, *c, MPI_STATUS_IGNORE);
}

static int gccl_alltoall(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t) {
	MPI_Datatype dt = gccl_mpi_type(t);
	return MPI_Alltoall((const void *)s, n, dt, (void *)r, n, dt, *c);
}
*/
import "C"

import "unsafe"

// collComm is a heap-allocated MPI_Comm handle (C memory).
type collComm = *C.MPI_Comm

// The Go numbering of types and operators must be the C enums'.
var (
	_ = [1]int{}[C.GCCL_T_DOUBLE-tDouble]
	_ = [1]int{}[tDouble-C.GCCL_T_DOUBLE]
	_ = [1]int{}[C.GCCL_OP_MIN-opMin]
	_ = [1]int{}[opMin-C.GCCL_OP_MIN]
)

func collNew() collComm { return C.gccl_coll_new() }

// collRelease frees a handle MPI never took.
func collRelease(m collComm) { C.free(unsafe.Pointer(m)) }

func collIdup(m collComm) (*request, error) {
	r := &request{}
	return r, mpiError(C.gccl_coll_idup(m, &r.req), "MPI_Comm_idup")
}

func collReady(m collComm) error {
	return mpiError(C.gccl_coll_ready(m), "MPI_Comm_set_errhandler")
}

func collFree(m collComm) error { return mpiError(C.gccl_coll_free(m), "MPI_Comm_free") }

func cAllreduce(m collComm, s, r uintptr, n, t, o int) error {
	return mpiError(C.gccl_allreduce(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t), C.int(o)), "MPI_Allreduce")
}

func cAllgather(m collComm, s, r uintptr, n, t int) error {
	return mpiError(C.gccl_allgather(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t)), "MPI_Allgather")
}

func cReduceScatterBlock(m collComm, s, r uintptr, n, t, o int) error {
	return mpiError(C.gccl_reduce_scatter_block(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t), C.int(o)), "MPI_Reduce_scatter_block")
}

func cBcast(m collComm, b uintptr, n, t, root int) error {
	return mpiError(C.gccl_bcast(m, C.uintptr_t(b), C.int(n), C.int(t), C.int(root)), "MPI_Bcast")
}

func cReduce(m collComm, s, r uintptr, n, t, o, root int) error {
	return mpiError(C.gccl_reduce(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t), C.int(o), C.int(root)), "MPI_Reduce")
}

func cSendrecv(m collComm, s uintptr, sn, dest int, r uintptr, rn, src, t int) error {
	return mpiError(C.gccl_sendrecv(m, C.uintptr_t(s), C.int(sn), C.int(dest), C.uintptr_t(r), C.int(rn), C.int(src), C.int(t)), "MPI_Sendrecv")
}

func cAlltoall(m collComm, s, r uintptr, n, t int) error {
	return mpiError(C.gccl_alltoall(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t)), "MPI_Alltoall")
}
