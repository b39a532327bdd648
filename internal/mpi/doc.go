// Package mpi is gccl's binding of MPI, the one package that links an MPI
// library: a thin C layer (cgo) and a Go API over it. Package mpiboot, the
// public bootstrap, is built on it, and gccl-perf times MPI's own
// collectives with it.
//
// Linking. Open MPI by default (pkg-config module "ompi", link_ompi.go),
// MPICH with the build tag "mpich" (module "mpich", link_mpich.go). MPI
// constants and handles are named only on the C side (shim.h, shim.c), so
// the same Go code works with both implementations. Built with CGO_ENABLED=0 the
// package has no MPI (nocgo.go): it still compiles, and Init, Join and every
// other call return a gccl.ErrSystem error saying so and what to do.
//
// The process. MPI is one per process, and so is this package's state:
// Init starts MPI (or Join attaches to the application's), World is a
// private duplicate of MPI_COMM_WORLD, and Finalize frees every duplicate
// Dup and Split made (Collectives' is Close's to free) and, only if Init
// started MPI, calls MPI_Finalize.
//
// Threads. Init asks for the level its caller wants. Below
// MPI_THREAD_MULTIPLE every MPI call is funnelled through one goroutine
// locked to the OS thread that initialised MPI (package funnel), so callers may
// use the package from any goroutine either way; MPI_Init_thread and
// MPI_Finalize always run on that thread.
//
// Waits. Communicators have MPI_ERRORS_RETURN, so an MPI failure comes back
// as a *gccl.Error with code SystemError and MPI_Error_string's text.
// Collectives on a Comm (Bcast, Allgather, Barrier, and Dup itself) are
// started nonblocking and polled with MPI_Test against a deadline
// (SetTimeout, else GCCL_TIMEOUT), so a missing peer gives gccl.ErrTimeout
// rather than a hang; calls that MPI has only in blocking form (Split, Free,
// Collectives) run where they may block and are abandoned at the deadline.
// MPI cannot cancel a collective: after a timeout the job should be aborted.
//
// Progress. From Init or Join to Finalize, a hook on gccl's progress seam
// (package internal/progress) calls MPI_Iprobe while gccl waits, so that MPI
// implementations that progress only inside MPI calls keep serving the
// other ranks (NCCL guide §4.2.1).
//
// MPI's own collectives. Collectives runs MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Sendrecv,
// MPI_Alltoall and a hand-written halo step (MPI_Irecv and MPI_Isend to
// each neighbour, then MPI_Waitall) on host buffers over a duplicate of
// MPI_COMM_WORLD, so that gccl-perf -baseline mpi times MPI beside gccl on
// the same buffers. They
// share the funnel and the deadline with everything else here.
package mpi
