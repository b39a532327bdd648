package transport

import "context"

// Transport is one way of connecting a rank to a peer, as NCCL's struct
// ncclTransport is: whether it can connect the two ranks, judged from what
// each published in its PeerInfo (same host, shared memory allowed, ...),
// and the connection itself.
type Transport interface {
	// Name names the transport in logs and errors ("shm", "net").
	Name() string
	// CanConnect reports whether the transport can connect rank me to peer.
	CanConnect(me, peer PeerInfo) bool
	// Connect sets up the two directions of channel between e's rank and
	// peer. It creates the sending direction and returns a receiving one
	// that binds to the peer's side on first use: it never waits for the
	// peer's own Connect.
	Connect(ctx context.Context, e *Endpoint, peer PeerInfo, channel int) (send, recv Conn, err error)
}

// transports is the table Endpoint.Connect consults for each peer, best
// first; the first row that can connect the two ranks connects them. The
// last row, TCP, connects any two. A new transport (a network provider) is
// a package under transport/ and one row here.
var transports = []Transport{shmTransport{}, netTransport{}}

// pick returns the first transport of the table that can connect me to peer.
func pick(me, peer PeerInfo) Transport {
	for _, t := range transports {
		if t.CanConnect(me, peer) {
			return t
		}
	}
	return nil
}
