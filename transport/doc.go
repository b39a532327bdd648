// Package transport connects the ranks of a communicator to each other on
// the host backend: it moves bytes between them.
//
// A Conn is one direction of a connection to one peer: an ordered,
// reliable sequence of messages, with deadlines taken from the context.
// Each message carries a Desc (24 bytes the caller fills: the host backend
// says there which operation it belongs to) and its length, once per
// message; Recv hands both to an accept callback before any byte, so a
// message that belongs to another operation is refused unread, then hands
// the bytes to a consume callback in pieces that are valid only during the
// call, so a shared-memory slot can be reduced from in place with no extra
// copy. Fail tells the peer's end that this end failed (a receiver that
// refused a message, a rank whose operation failed): the peer's Send or
// Recv then fails with that error instead of waiting.
//
// Each rank opens an Endpoint per communicator with Listen: it selects the
// network provider, opens the provider's listener on the device the
// topology chooses and names its shared-memory rings. The rank publishes Endpoint.Info (a
// PeerInfo: rank, host hash, ring prefix, provider name and listener handle,
// sent in its versioned, checksummed MarshalBinary form through the
// bootstrap all-gather) and then calls Connect for each peer and channel.
//
// Transports. As in NCCL (struct ncclTransport), each way of connecting two
// ranks is a Transport: CanConnect judges from the two PeerInfos whether it
// can connect them, and Connect does. Connect asks a table of them in order
// and uses the first that can: shared memory (transport/internal/shm) when
// both ranks are on one host (equal host hashes, see transport/topo) and
// neither disabled it with GCCL_SHM_DISABLE (NCCL_SHM_DISABLE), else net,
// which connects any two ranks over the endpoint's network provider.
//
// Network providers (transport/network, NCCL's net API) are a second
// table: socket (TCP, transport/network/socket) and, where built in, ucx.
// GCCL_NET (NCCL_NET; Config.NetName overrides it) names one; auto, the
// default, takes a provider that reports an RDMA device unless
// GCCL_IB_DISABLE is set, else socket. An unknown or unusable explicit
// choice is an error from Listen, and ranks that chose different providers
// get an error naming both from Connect. Connections present the
// communicator id and prove the unique ID's secret, and are rejected
// without them. Logs at INFO (subsystem NET) say which provider and device
// the endpoint and each connection use, and why.
//
// Placement follows the sysfs topology (transport/topo), as NCCL's does.
// The device: for a rank bound to a GPU (Config.GPUBusID, which the
// GPU-via-host backend fills) the provider's device nearest the GPU on the
// PCI tree (fewest hops, one under the GPU's own root first); for a host
// rank the first on a NUMA node the process's CPUs belong to; ties and
// devices without a PCI path keep the provider's order, and
// GCCL_SOCKET_IFNAME, where set, wins. The CPUs: the connections'
// long-lived progress goroutines (the socket provider's helpers, ucx's
// progress goroutine) each run on a locked OS thread restricted to the
// CPUs near the GPU (a host rank: near its device), intersected with the
// process's affinity, and left alone where that is empty;
// GCCL_IGNORE_CPU_AFFINITY (NCCL_IGNORE_CPU_AFFINITY) takes the CPUs near
// the GPU whatever the process's affinity. Config.Sysfs points all of it
// at a fake tree in tests. A new provider is a package under
// transport/network that passes networktest, and one row of the table.
//
// The net transport turns a provider's tagged transfers into Conns: a
// message's first transfer carries its header (descriptor, length) and up
// to 64 KiB of it, copied into a staging buffer pinned with runtime.Pinner
// and registered with the connection once; the rest goes in chunks
// (Config.NetChunkSize, 512 KiB by default, the same on every rank) straight
// from the caller's bytes, pinned and registered for the call, four in
// flight. A message of at most 64 KiB is staged whole: Send returns once
// its transfer is posted, and the next Send, Fail or Close (within 200 ms)
// finishes it, so a net Conn buffers one short message and is a Buffered
// (Free is 1 while the staging buffer is free), which lets the host
// backend send it on its own goroutine without a hand-off. The receiving side keeps four registered staging slots with
// receives posted, so the provider reads ahead of Recv, and hands each slot
// to consume in place. A receiver's Fail reaches the sender through the
// provider's network.Failer (the socket provider sends it back on its
// control socket), a sender's Fail travels as a failure record in place of
// the next message.
//
// Connect never waits for the peer's own Connect: it sets up the sending
// direction, and the receiving direction binds to the peer's side on its
// first Recv. So ranks may connect to each other in any order without
// deadlock. Endpoint.Close closes every Conn it made, unlinks ring files and
// stops the listener's goroutines.
//
// A peer that closed its side, or died, turns into gccl.ErrRemote; an expired
// deadline into gccl.ErrTimeout (a receive that expires before its message
// began leaves the stream usable; a send that expires breaks it).
// transport/fault wraps Conns (and sockets) with seeded fault injection for
// tests.
//
// The GPU backend reaches peers on its host differently, by mapping their
// memory (transport/peermem); transport/topo says which ranks share a host.
package transport
