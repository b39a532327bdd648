// Package mpiboot bootstraps gccl from MPI. It is pure Go: MPI itself is
// reached through gccl's one binding of MPI, the internal package
// internal/mpi, which links Open MPI by default (pkg-config module "ompi")
// or MPICH with the build tag "mpich" (module "mpich"), naming MPI's
// constants and handles only on its C side, so the same program works with
// both implementations. Built with CGO_ENABLED=0 there is no MPI: the
// package still compiles, and Init, Join and every other call return a
// gccl.ErrSystem error saying so.
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
package mpiboot
