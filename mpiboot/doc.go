// Package mpiboot bootstraps gccl from MPI. It is the only package of gccl
// that links an MPI library, through a thin cgo layer: Open MPI by default
// (pkg-config module "ompi"), MPICH with the build tag "mpich" (module
// "mpich"). MPI constants and handles are named only on the C side, so the
// same Go code works with both implementations. Built with CGO_ENABLED=0
// the package has no MPI: it still compiles, and Init, Join and every other
// call return a gccl.ErrSystem error saying so.
//
// A job starts MPI with Init (or, when the application has already started
// MPI itself, for example with gompi's mpi.Start, attaches with Join), then
// creates its communicators with NewComm (one device per process) or
// NewComms (several devices per process); rank 0 makes the unique ID and
// MPI broadcasts it, and the device of each process defaults to its local
// rank, found by all-gathering the host hash the transports use (host name
// and kernel boot ID, or GCCL_HOSTID when set).
// Finalize ends it: it frees mpiboot's communicator and, only if Init started
// MPI, calls MPI_Finalize.
//
//	if err := mpiboot.Init(); err != nil { ... }
//	defer mpiboot.Finalize()
//	c, err := mpiboot.NewComm(nil)          // rank, size and device from MPI
//	...
//	err = mpiboot.Wait(c.Device(), s, time.Minute) // instead of Synchronize
//
// Communicators from the application's MPI. NewComm spans the whole job.
// For a part of it, mpiboot duplicates a communicator the application owns
// into a Comm: FromFortran (the MPI_Fint of MPI_Comm_c2f, from C, Fortran or
// mpi4py), FromHandle (the raw MPI_Comm as an integer), SplitWorld
// (MPI_Comm_split of the job) or SplitApp (one communicator per command of an
// MPMD launch, by MPI_APPNUM). Over a Comm, ShareUniqueID broadcasts the
// unique ID from its rank 0, LocalRank counts the processes of that Comm on
// this host, and Comm.NewComm makes a gccl communicator of the same ranks:
//
//	app, err := mpiboot.SplitApp()        // mpirun -np 4 a : -np 2 b
//	c, err := app.NewComm(nil)             // a's 4 ranks, or b's 2
//
// Launchers. A binary built for Open MPI and started by MPICH's mpiexec (or
// the reverse) runs as many 1-process worlds; Init and Join log a WARN when
// the launcher's environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE)
// counts more processes than MPI's world.
//
// Threads. mpiboot asks for MPI_THREAD_MULTIPLE. When MPI grants less, every
// MPI call is funnelled through one goroutine locked to the OS thread that
// initialised MPI, so callers may use mpiboot from any goroutine either way.
// MPI_Init_thread and MPI_Finalize always run on that thread.
//
// Errors. mpiboot works on a private duplicate of MPI_COMM_WORLD with
// MPI_ERRORS_RETURN, so an MPI failure comes back as a *gccl.Error with code
// SystemError and MPI_Error_string's text instead of aborting the job.
// Collectives (Bcast, Allgather, Barrier) are started nonblocking and polled
// against a deadline (SetTimeout, else GCCL_TIMEOUT, default five minutes), so a missing peer
// gives gccl.ErrTimeout rather than a hang; after a timeout the job should
// be aborted (Abort), since MPI cannot cancel a collective.
//
// Progress. Some MPI implementations progress only inside MPI calls; a
// process that blocks on a GPU stream while a peer waits on MPI can then
// deadlock (NCCL guide §4.2.1). From Init or Join to Finalize, mpiboot
// hooks MPI_Iprobe into every wait of gccl (Init, Split, Finalize, Close,
// Register, Synchronize, and the engine running a launch): at most one probe
// per 200 µs, on the funnel thread below MPI_THREAD_MULTIPLE. When the
// application joined an MPI below MPI_THREAD_MULTIPLE, mpiboot probes only
// while an application call waits inside gccl, never behind the
// application's back. Wait polls a stream the same way, for code that
// waits on streams by hand.
//
// MPI's own collectives. Collectives runs MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Sendrecv and
// MPI_Alltoall on host buffers over a duplicate of MPI_COMM_WORLD, so a
// program (gccl-perf -baseline mpi, or an application deciding which
// library to use) can time MPI beside gccl on the same buffers. It is
// exported on purpose and lives here rather than in a package of its own:
// mpiboot is gccl's one binding of MPI (the cgo guard in test/guard allows
// import "C" for MPI here and nowhere else), and below
// MPI_THREAD_MULTIPLE every MPI call of the process must go through the one
// thread that initialised MPI, which mpiboot owns. The collectives share
// that funnel, mpiboot's deadline and its Finalize, which frees them.
package mpiboot
