// Package group is the explicit form of NCCL's ncclGroupStart/ncclGroupEnd:
// Go has no thread-locals, so a group is a value. Operations added to a
// Group are validated and held; End launches them, one launch per
// communicator (per device), so collectives and send/receive over several
// communicators driven by one goroutine progress together. Within one
// communicator the collectives run in the order they were added, then its
// sends and receives progress concurrently. A group holds any number of
// operations; End on a group with a closed communicator fails with a typed
// error before anything is launched.
//
// As in NCCL, a group is one call: only the order of each communicator's
// operations must match across ranks, not the order in which ranks add the
// communicators, even when several communicators share one stream (on a
// GPU their kernels go to the stream in an order every rank agrees on). One
// communicator's operations may use several streams (as NCCL >= 2.20): the
// launch starts when every one of them has run what was enqueued before,
// and later work on any of them waits for it. On a GPU those streams must
// all be eager or all be captured into the same CUDA graph (fork the
// others into the capture with an event, and join them back before ending
// it); otherwise End fails with gccl.ErrInvalidUsage naming two of them.
//
// A group also creates, splits and finalizes communicators (InitRank, Split,
// Finalize: NCCL's ncclCommInitRank, ncclCommSplit and ncclCommFinalize
// inside a group), so that one goroutine drives every device of its
// process, as the guide's "several devices per thread" example does. End
// creates first (every InitRank and Split at once), then launches the
// operations, then finalizes (every Finalize at once). The ranks one group
// created in this process are finalized together, in one group.
//
// Streams and devices: a stream value names a stream of one device
// ordinal, and two Device values with the same ordinal (two device.Open
// calls, two communicators on one device) are the same device: a stream
// made by either serves both, and stream 0 is that device's one default
// stream (per device, as CUDA's legacy stream) for both. Give a
// communicator's operations streams of its own device's ordinal: on a GPU
// a stream of another device fails the launch; the host backend does not
// check, but there stream 0 always means the communicator's device's.
//
// A group's communicators are all blocking or all nonblocking
// (comm.Config.Blocking): End of a group that mixes them fails with
// gccl.ErrInvalidArgument naming "comm", as NCCL's ncclGroupEnd does.
package group
