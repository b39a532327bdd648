// Package bootstrap is gccl's socket bootstrap: how the ranks of a
// communicator find each other without MPI, and the small-message network
// (all-gather, barrier, tagged send/recv) they use to set up transports.
//
// Rendezvous. NewRootID, called in one process, makes sure that process runs
// a root listener (one per process and address, shared by every
// communicator) and registers a rendezvous under a random 128-bit key with a
// random 128-bit secret; both travel inside the unique ID. Each rank dials
// the root and proves it holds the secret by challenge-response (package
// internal/auth: the root's fresh nonce, the rank's nonce, HMAC-SHA256 both
// ways; the secret never crosses the wire, a captured exchange cannot be
// replayed, a wrong proof is logged and the connection rejected), then
// presents its own listen address.
//
// Before a peer has proven the secret, a listener (the root, and each rank's
// mesh listener) runs at most 256 handshakes at once (more connections wait
// in the kernel's backlog), gives each 5 s, and reads at most 80 bytes from
// it; its accept loop (package internal/accept) rides out fd exhaustion. When all ranks have arrived the root answers every one with
// the full address list; a rendezvous completes once, so a unique ID creates
// exactly one communicator. Two ranks claiming the same rank, or disagreeing
// on the number of ranks, fail the whole rendezvous with InvalidArgument; a
// rank that never arrives makes the root answer TimeoutError naming it, a
// little before the waiting ranks' own deadline.
//
// Scalable rendezvous (InitScalable). With k unique IDs, rank r joins the
// root of its slice (slices are contiguous, of n/k ranks). Each slice's
// first rank, its leader, then joins a second rendezvous of the k leaders at
// the first ID's root, presenting its slice's list, and receives all slices;
// it hands the full list back to its slice root, which relays it to the rest
// of the slice. No root ever holds more than n/k + k connections.
//
// Connections. Every rank listens (on the interface GCCL_SOCKET_IFNAME
// selects, else the first non-loopback interface that is up, else
// loopback). After the rendezvous each rank dials the next rank of the ring
// and waits for the previous one's connection; every other connection is
// made on first use (a Send or Recv, or a collective's tree edge), proving
// the same secret, as NCCL's bootstrap does. A connection carries messages
// both ways; if two ranks dial each other at once both connections stay,
// each rank sending on the first it had, so messages of one tag from one
// peer still arrive in order. A goroutine reads each connection into
// per-(peer, tag) mailboxes. A rank holds its listener, its two ring
// connections and the few its collectives and point-to-point use: about
// five file descriptors at any scale, where a full mesh needed 2(n-1).
//
// Collectives. AllGather and Barrier run over a binomial tree rooted at
// rank 0 (see AllGather): 2·log2(n) hops, and only the tree's n-1 edges as
// connections, half of them ring edges already.
//
// Liveness. A rank that dies is seen by its ring neighbours as the end of
// a connection without a goodbye, and the news travels around the ring, so
// every survivor's Lost fires naming it, and every wait on it fails with
// RemoteError instead of hanging (see liveness.go). A wait on a live peer
// goes on (what the lost rank sent may still be on its way through it);
// a rank whose part of a collective fails tells the ranks waiting for it
// (see gather.abandon), so a collective that needed the lost rank fails
// at once everywhere.
//
// Every wait has a deadline: the context's, else Config.Timeout.
package bootstrap
