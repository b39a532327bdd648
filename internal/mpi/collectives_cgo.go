//go:build cgo

package mpi

// The Go half of Collectives' C calls (shim.c maps the types and operators
// to MPI's, never by constant value). The communicator is a Comm's handle.

// #include "shim.h"
import "C"

// The Go tables of types and operators must be as long as the C enums.
var (
	_ = [1]int{}[C.GCCL_T_DOUBLE+1-len(mpiTypes)]
	_ = [1]int{}[len(mpiTypes)-C.GCCL_T_DOUBLE-1]
	_ = [1]int{}[C.GCCL_OP_MIN+1-len(mpiOps)]
	_ = [1]int{}[len(mpiOps)-C.GCCL_OP_MIN-1]
)

func cAllreduce(m handle, s, r uintptr, n, t, o int) error {
	return mpiError(C.gccl_mpi_allreduce(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t), C.int(o)), "MPI_Allreduce")
}

func cAllgather(m handle, s, r uintptr, n, t int) error {
	return mpiError(C.gccl_mpi_allgather(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t)), "MPI_Allgather")
}

func cReduceScatterBlock(m handle, s, r uintptr, n, t, o int) error {
	return mpiError(C.gccl_mpi_reduce_scatter_block(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t), C.int(o)), "MPI_Reduce_scatter_block")
}

func cBcast(m handle, b uintptr, n, t, root int) error {
	return mpiError(C.gccl_mpi_bcast(m, C.uintptr_t(b), C.int(n), C.int(t), C.int(root)), "MPI_Bcast")
}

func cReduce(m handle, s, r uintptr, n, t, o, root int) error {
	return mpiError(C.gccl_mpi_reduce(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t), C.int(o), C.int(root)), "MPI_Reduce")
}

func cSendrecv(m handle, s uintptr, sn, dest int, r uintptr, rn, src, t int) error {
	return mpiError(C.gccl_mpi_sendrecv(m, C.uintptr_t(s), C.int(sn), C.int(dest), C.uintptr_t(r), C.int(rn), C.int(src), C.int(t)), "MPI_Sendrecv")
}

func cAlltoall(m handle, s, r uintptr, n, t int) error {
	return mpiError(C.gccl_mpi_alltoall(m, C.uintptr_t(s), C.uintptr_t(r), C.int(n), C.int(t)), "MPI_Alltoall")
}

func cHalo(m handle, faces []Face, t int) error {
	n := len(faces)
	if n == 0 {
		return nil
	}
	peers, counts := make([]C.int, n), make([]C.int, n)
	sends, recvs := make([]C.uintptr_t, n), make([]C.uintptr_t, n)
	for i, f := range faces {
		peers[i], counts[i] = C.int(f.Peer), C.int(f.Count)
		sends[i], recvs[i] = C.uintptr_t(f.Send), C.uintptr_t(f.Recv)
	}
	return mpiError(C.gccl_mpi_halo(m, C.int(n), &peers[0], &sends[0], &recvs[0], &counts[0], C.int(t)), "MPI_Isend/MPI_Irecv halo")
}
