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
// Each rank opens an Endpoint per communicator with Listen: it starts the
// rank's TCP listener on the interface GCCL_SOCKET_IFNAME (NCCL_SOCKET_IFNAME)
// allows and names its shared-memory rings. The rank publishes
// Endpoint.Info (a PeerInfo, sent in its MarshalBinary form through the
// bootstrap all-gather) and then calls Connect for each peer and channel.
//
// Transports. As in NCCL (struct ncclTransport), each way of connecting two
// ranks is a Transport: CanConnect judges from the two PeerInfos whether it
// can connect them, and Connect does. Connect asks a table of them in order
// and uses the first that can: shared memory (transport/internal/shm) when
// both ranks are on one host (equal host hashes, see transport/topo) and
// neither disabled it with GCCL_SHM_DISABLE (NCCL_SHM_DISABLE), else TCP
// sockets (transport/internal/net), which connect any two ranks. Sockets
// present the communicator id and prove the unique ID's secret, and are
// rejected without them. A new transport (a network provider such as UCX)
// is a package under transport/internal and one row of the table.
//
// Connect never waits for the peer's own Connect: it sets up the sending
// direction, and the receiving direction binds to the peer's side on its
// first Recv. So ranks may connect to each other in any order without
// deadlock. Endpoint.Close closes every Conn it made, unlinks ring files and
// stops the listener's goroutines.
//
// A peer that closed its side, or died, turns into gccl.ErrRemote; an expired
// deadline into gccl.ErrTimeout. transport/fault wraps Conns (and sockets) with
// seeded fault injection for tests.
//
// The GPU backend reaches peers on its host differently, by mapping their
// memory (transport/peermem); transport/topo says which ranks share a host.
package transport
