// Package comm creates and destroys gccl communicators.
//
// A communicator is a set of ranks (one per device) that run collectives
// and point-to-point operations together, as in NCCL. The ranks find each
// other through a unique ID: one process calls NewUniqueID, which starts a
// rendezvous listener in that process, and hands the ID's bytes to the
// others by any means (MPI_Bcast in package mpiboot, a file, a pipe); each
// rank then calls InitRank with the ID, the number of ranks and its rank.
// InitAll makes every rank of a communicator in one process, one goroutine
// per device. InitRankScalable spreads the rendezvous of a large job over
// several IDs. InitRanks, SplitAll and FinalizeAll create, split and
// finalize several ranks at once, so that one goroutine can drive every
// device of its process (NCCL's calls inside a group; package group's
// InitRank, Split and Finalize use them). Ranks of one communicator that one
// such call (or InitAll) made in this process are siblings: they are
// finalized together, and a Finalize of one alone fails at once with
// gccl.ErrInvalidUsage instead of waiting for the others until the deadline.
//
// InitRankConfig with Config.Blocking false returns at once; Status reports
// gccl.ErrInProgress until the communicator is ready (then nil) or has
// failed (then the failure). Split makes sub-communicators by colour and
// key; every member of the parent must call it, in the same order as its
// other Splits.
//
// Drive a communicator from one goroutine at a time, in the same order on
// every rank (package coll says what is checked when ranks disagree); a
// failed communicator (AsyncError set) fails every later operation.
//
// The lifetime follows NCCL: Finalize (flush and synchronise), then Close
// (free everything); or Abort, which returns promptly and makes peers that
// wait on this rank fail with gccl.ErrRemote instead of hanging. Close and
// Abort are safe on a nil communicator and when called twice; any other use
// of a closed communicator is gccl.ErrInvalidUsage.
//
// A communicator opens its device (Config.Backend and Config.Device) and
// closes it in Close and Abort, which frees what that device's Alloc and
// NewStream made: free or keep such buffers before. To keep a device past
// the communicator, or share one between communicators, open it yourself
// (device.Open) and pass it as Config.UseDevice; the communicator then
// leaves it open.
//
// A communicator also owns its buffer registrations (bufreg.Register):
// Close and Abort release them after the operations stopped, so their
// handles are deregistered and their memory may be freed.
//
// Every wait has a deadline: Config.Timeout, else GCCL_TIMEOUT, else five
// minutes. Errors are *gccl.Error naming the argument at fault.
package comm
