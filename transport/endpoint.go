package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	tnet "github.com/gccl/gccl/transport/internal/net"
)

// Endpoint is a rank's transport state in one communicator: its TCP
// listener, its shared-memory name prefix and every Conn it handed out.
type Endpoint struct {
	cfg  Config
	info PeerInfo
	ln   *tnet.Listener

	mu     sync.Mutex
	conns  []Conn
	used   map[[2]int]bool // (peer rank, channel) already connected
	closed bool
}

// Listen opens the rank's TCP listener on the allowed interface and names
// its shared-memory prefix.
func Listen(cfg Config) (*Endpoint, error) {
	cfg = cfg.resolve()
	if cfg.Rank < 0 || cfg.Rank >= tnet.MaxRank {
		return nil, gccl.Errorf(gccl.InvalidArgument, "Rank", "rank %d out of range (0..%d)", cfg.Rank, tnet.MaxRank-1)
	}
	if cfg.NetSockets < 1 || cfg.NetSockets > tnet.MaxSockets {
		return nil, gccl.Errorf(gccl.InvalidArgument, "NetSockets", "%d sockets per connection out of range (1..%d)", cfg.NetSockets, tnet.MaxSockets)
	}
	ip, err := tnet.ListenIP(cfg.IfName)
	if err != nil {
		return nil, err
	}
	ln, err := tnet.Listen(ip, tnet.Identity{CommID: cfg.CommID, Secret: cfg.Secret}, cfg.Rank, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{cfg: cfg, ln: ln, used: map[[2]int]bool{}}
	e.info = PeerInfo{Rank: cfg.Rank, HostHash: cfg.HostHash, NetAddr: ln.Addr()}
	if !cfg.ShmDisable {
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		e.info.ShmPrefix = fmt.Sprintf("gccl-%d-r%d-%s", os.Getpid(), cfg.Rank, hex.EncodeToString(nonce[:]))
	}
	return e, nil
}

// Info is what this rank publishes to its peers.
func (e *Endpoint) Info() PeerInfo { return e.info }

// Transport is the transport Connect picks for peer: the first row of the
// table that can connect the two ranks.
func (e *Endpoint) Transport(peer PeerInfo) Transport { return pick(e.info, peer) }

// UsesShm reports whether Connect picks shared memory for peer: both on one
// host and both publishing a prefix (SHM not disabled on either side).
func (e *Endpoint) UsesShm(peer PeerInfo) bool { return e.Transport(peer) == Transport(shmTransport{}) }

// Connect returns the two directions between this rank and peer for channel:
// send carries this rank's bytes to peer, recv the peer's bytes to this rank.
// Both ranks call it for each other, in any order; each (peer, channel) pair
// is connected once. Connect sets up the sending direction (creating the
// ring, or dialling and handshaking the sockets) and never waits for the
// peer's Connect: the receiving direction binds to the peer's side on its
// first Recv (a receiving Conn's Bind(ctx) method waits just for that). The endpoint owns
// the Conns: Close closes them.
func (e *Endpoint) Connect(ctx context.Context, peer PeerInfo, channel int) (send, recv Conn, err error) {
	if err := peer.Validate(); err != nil {
		return nil, nil, err
	}
	if channel < 0 || channel >= tnet.MaxChannel {
		return nil, nil, gccl.Errorf(gccl.InvalidArgument, "channel", "channel %d out of range (0..%d)", channel, tnet.MaxChannel-1)
	}
	if err := e.reserve(peer.Rank, channel); err != nil {
		return nil, nil, err
	}
	t := e.Transport(peer)
	if send, recv, err = t.Connect(ctx, e, peer, channel); err != nil {
		return nil, nil, fmt.Errorf("connecting to rank %d, channel %d over %s: %w", peer.Rank, channel, t.Name(), err)
	}
	if err := e.track(send, recv); err != nil {
		return nil, nil, err
	}
	env.Logger("NET").Debug("connected", "rank", e.cfg.Rank, "peer", peer.Rank, "channel", channel, "transport", t.Name())
	return send, recv, nil
}

// reserve marks (peer, channel) as connected, or fails if it already is.
func (e *Endpoint) reserve(peer, channel int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return gccl.Errorf(gccl.InvalidUsage, "endpoint", "Connect on a closed endpoint")
	}
	k := [2]int{peer, channel}
	if e.used[k] {
		return gccl.Errorf(gccl.InvalidUsage, "channel", "rank %d channel %d is already connected", peer, channel)
	}
	e.used[k] = true
	return nil
}

// track records new Conns for Close, or closes them if Close came first.
func (e *Endpoint) track(cs ...Conn) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		for _, c := range cs {
			c.Close()
		}
		return gccl.Errorf(gccl.InvalidUsage, "endpoint", "endpoint closed during Connect")
	}
	e.conns = append(e.conns, cs...)
	return nil
}

// Close closes every Conn handed out (unlinking their ring files) and the
// listener, and stops the endpoint's goroutines. Safe on nil and twice.
func (e *Endpoint) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	conns := e.conns
	e.conns = nil
	e.mu.Unlock()
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.Close())
	}
	errs = append(errs, e.ln.Close())
	return errors.Join(errs...)
}
