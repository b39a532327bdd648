// Package progress is the seam through which a communication library that
// lives beside gccl in the same process (MPI, through package mpiboot) gets
// a chance to make progress while gccl waits. gccl itself never calls that
// library: it only marks the time it spends waiting, and one hook, installed
// by the library's binding, is called at a bounded rate meanwhile.
//
// Some MPI implementations move messages only inside MPI calls (NCCL guide
// §4.2.1). If a process waits inside gccl (Init, Split, Finalize, Close,
// Register, Synchronize, or the engine running a launch) while a peer waits
// in MPI for this process's side of a message, the job deadlocks unless
// something calls MPI here. Package mpiboot installs a hook that calls
// MPI_Iprobe.
//
// A wait is marked with Enter, which returns the function that ends it.
// Blocking waits are those of an application call into gccl: the caller's
// thread is inside gccl, so it is not calling MPI itself. Background waits
// are the engine's, on its own goroutines, while the application may be
// calling MPI concurrently; the hook is told which kind is under way so that
// below MPI_THREAD_MULTIPLE it can keep to blocking waits only.
//
// While at least one wait is under way and a hook is installed, one driver
// goroutine calls the hook every Interval; with no wait under way nothing
// runs. The hook never runs on the waiting goroutine, so a slow hook delays
// no gccl operation.
package progress
