// Package gpunet is the engine's GPU backend across hosts: a GPU
// communicator whose ranks cannot all map each other's memory (a peer on
// another host, or more ranks than the peer-memory kernels address,
// kernels.MaxRanks) runs every operation as one ring-kernel launch on the
// caller's stream (module kernels.RingFatbin), and the communicator's
// proxy goroutine (package proxy) moves the kernels' FIFO slots over the
// network provider. docs/gpunet.md is the contract: FIFO layout, counters,
// ring steps, proxy.
//
// # Setup
//
// Open loads the ring module, allocates the host-mapped control block
// (package ctlblock: abort and status words), listens on the transport's
// network provider (transport.Listen: the provider and device it
// selects), all-gathers the settings and the listeners' handles (with the
// ranks' host hashes) over the bootstrap, orders the ring by host
// (gpuplan.RingOrder: each host's ranks together, so the ring crosses the
// network once out of each host whatever the rank placement; every rank
// computes the same order), puts the order in device memory for the
// kernels (kernels.RingDesc.Ranks), and connects each channel of the ring
// to the next rank of the ring and from the previous one. A connection
// between ranks of one host is direct (direct.go, unless
// GCCL_P2P_DISABLE): one FIFO in the receiver's GPU memory (a cuMem
// allocation whose descriptor the sender fetches over a unix socket) that
// the sender maps, with no proxy and no network. Any other is a network
// connection: a FIFO in pinned, device-mapped host memory at each end,
// joined by provider-level connections (transport.Endpoint.DialNet and
// AcceptNet: every rank dials, then accepts) that the proxy serves. Every
// rank must use the same slot size (GCCL_NET_BUFFSIZE, 8 slots, default 4
// MiB), channel count (GCCL_NET_NCHANNELS, 1 to kernels.RingMaxChannels,
// default 4) and GCCL_P2P_DISABLE; a rank that differs fails Open with
// gccl.ErrInvalidUsage naming the setting.
//
// # Operations
//
// Submit waits for the launch's turn, chains the launch after the
// communicator's previous one whatever its stream and joins the launch's
// streams (package streamjoin, as package gpu), launches one ring kernel
// per collective on the channels gpuplan.Ring.Channels gives it (a cost
// model of the ring's direct and network edges, at most
// GCCL_NET_NCHANNELS; every rank computes the same grid from the
// operation, the ring and the settings) with this rank's ring position
// and the root's, then the launch's Sends and Recvs, and kicks the
// proxy. Nothing on the host waits for the GPU, so launches can be
// captured into CUDA graphs and replayed: the proxy finds a replay's
// work in the FIFO counters, and polls hot for as long as a graph
// holding the communicator's launches exists (graphHold: one proxy.Hold
// per capture, released with the graph).
//
// Point-to-point: one connection pair per peer, made on first use: both
// ranks of a pair have an op naming the other, so each connects in its
// Submit (a direct pair exchanges its FIFOs over the bootstrap, a network
// pair dials, then accepts the peer's dial; Meets tells the core that
// such a Submit waits for its peers). A launch's Sends and Recvs become
// steps (d, c): chunk c of the Sends to rank+d with chunk c of the Recvs
// from rank-d, which the peer at each end puts in the same step, in
// (d, c) order, packed into gccl_net_p2p launches of up to
// kernels.NetP2PMaxPeers steps and kernels.NetP2PMaxPieces pieces
// (sendrecv.go says why no cycle of waits can form). A Send to this rank
// is a device copy into the matching Recv. A one-rank communicator's
// collectives are copies (its PreMulSum is refused: this backend serves
// several hosts).
//
// # Failures
//
// The kernels' waits poll the control block's abort and status words and
// give up after the engine's timeout (kernels.StatusTimeout); a kernel
// that receives a slot of another size than its operation expects (the
// ranks launched different operations) reports kernels.StatusBadUsage; a
// failed network transfer makes the proxy store kernels.StatusNetwork,
// which stops every kernel wait at once. Status turns the word into the
// typed error (the proxy's own error for a network failure), which the
// core reports as the communicator's async error.
//
// # Teardown
//
// Close waits for the device (with abort it first raises the abort word),
// ends the network connections, unmaps the peers' direct FIFOs and frees
// its own FIFOs (a direct FIFO's memory lives on while a peer still maps
// it). Close never waits for a peer: an orderly Close stops the proxy
// (it sends what the kernels posted, then stops serving, keeping the
// connections), then closes the connections with the provider's bye, which
// a peer's proxy still serving takes as the end of an idle connection
// (network.ErrPeerClosed), not a failure; a later use of it fails at once,
// naming this rank. Finalize quiesces the backend (Quiesce: the same stop)
// before its barrier, so after it no proxy serves at all. Abort ends every
// connection with network.Abort, without waiting for any peer, and without
// a bye. docs/gpunet.md, "Teardown of the network
// connections". A kernel waiting on a direct peer that died
// stops at the timeout: no proxy watches a direct connection.
package gpunet
