// Package group is the explicit form of NCCL's ncclGroupStart/ncclGroupEnd:
// Go has no thread-locals, so a group is a value. Operations added to a
// Group are validated and held; End launches them, one launch per
// communicator (per device), so collectives and send/receive over several
// communicators driven by one goroutine progress together. Within one
// communicator the collectives run in the order they were added, then its
// sends and receives progress concurrently. A group holds any number of
// operations; End on a group with a closed communicator fails with a typed
// error before anything is launched.
package group
