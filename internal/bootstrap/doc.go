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
// Mesh. Every rank listens (on the interface GCCL_SOCKET_IFNAME selects, else
// the first non-loopback interface that is up, else loopback) and, after the
// rendezvous, dials every other rank, proving the same secret, so
// that each ordered pair of ranks has one connection. A goroutine reads each
// incoming connection into per-(peer, tag) mailboxes; messages of one tag
// from one peer arrive in order. Because every rank is connected to every
// other, a rank that closes or aborts is seen by each survivor as an EOF,
// and every wait involving it fails with RemoteError instead of hanging.
//
// Every wait has a deadline: the context's, else Config.Timeout.
package bootstrap
