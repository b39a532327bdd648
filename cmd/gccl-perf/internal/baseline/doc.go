// Package baseline holds the libraries gccl-perf compares gccl with in the
// same run (-baseline), each a lib.Baseline opened by name on every rank:
//
//   - "mpi": MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block,
//     MPI_Bcast, MPI_Reduce, MPI_Sendrecv, MPI_Alltoall and, for halo, the
//     halo step MPI codes write by hand (MPI_Irecv and MPI_Isend to each
//     neighbour, then MPI_Waitall; internal/mpi.Collectives) on the same
//     host buffers as gccl, timed on the host;
//   - "nccl": NCCL (libnccl.so.2, dlopen'd through internal/nccl) on the
//     same device buffers and stream as gccl (halo: a group of ncclSend and
//     ncclRecv per neighbour), timed by the run's clock. It
//     measures its own init (initcost.Measured), registers the sweep's
//     memory under -register (arena.Registrar) and aborts after a failure
//     (lib.Aborter). It keeps NCCL off NVLink multicast unless the user
//     enabled NVLS, and blocking, as nccl-tests measures it.
package baseline
