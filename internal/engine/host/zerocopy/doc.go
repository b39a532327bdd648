// Package zerocopy is the host backend's zero-copy path between the ranks
// of one host: each rank has a control block (one page of host shared
// memory that every peer maps, and two copy-in areas), and a collective
// whose buffers every rank can map runs with no transport at all.
//
// Open is collective: it allocates this rank's control block and maps
// every peer's, and returns nil on every rank where one of them cannot
// (ranks on several hosts, SHM disabled, a mapping failed). Path.Run runs
// one collective or reports that the caller must run a step schedule.
//
// Each rank publishes where its buffers lie (region name, inode, offset)
// and arrives at a barrier; if every buffer the kind needs is in memory
// from a host device's Alloc, every rank maps its peers' regions (cached
// per peer, at most 16, keyed by name and inode so a reused name is
// remapped) and works on its own slice: AllReduce and Reduce reduce slice
// r of every input, block by block in a private accumulator, and store it
// into every output (or the root's); ReduceScatter reduces block r into
// the rank's own output; AllGather and Broadcast copy the peers' inputs
// into the rank's own output. A second barrier ends the operation.
// Operations whose input is at most 64 KiB are copy-in operations instead:
// each rank copies its input into its control block's copy-in area, one
// barrier, and each rank computes its own output from every area (any
// host memory works; nothing of the user's is mapped). Otherwise every
// rank reaches the same verdict from the same published descriptors and
// runs the step schedule instead.
//
// The barriers are sequence words in the control blocks (package futex):
// a waiter spins briefly, yields, then sleeps on a futex that the last
// arrival wakes; every wait checks the deadline, Abort, the peer's failure
// flag and whether the peer's process still runs. Descriptors alternate
// between two sets by barrier parity, so a rank that runs ahead never
// overwrites what a slower peer still reads. Ranks publish their
// operation's descriptor (package opdesc) too and compare it at the first
// barrier: ranks that disagree all fail there, before any byte is used.
package zerocopy
