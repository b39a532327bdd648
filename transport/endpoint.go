package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	tnet "github.com/gccl/gccl/transport/internal/net"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/topo"
)

// Endpoint is a rank's transport state in one communicator: its network
// provider and listener, its shared-memory name prefix and every Conn it
// handed out.
type Endpoint struct {
	cfg  Config
	info PeerInfo
	net  network.Provider
	dev  int                // the provider's device in use
	prop network.Properties // its properties
	cpus topo.CPUSet        // where connections' progress goroutines run; nil: anywhere
	ln   network.Listener

	mu       sync.Mutex
	conns    []Conn
	used     map[[2]int]bool // (peer rank, channel) already connected
	closed   bool
	aborting atomic.Bool // Abort: network connections end without waiting for peers
}

// Listen selects the network provider (Config.NetName, GCCL_NET), opens the
// rank's listener on its best device and names the shared-memory prefix.
func Listen(cfg Config) (*Endpoint, error) {
	cfg = cfg.resolve()
	if cfg.Rank < 0 || cfg.Rank >= tnet.MaxRank {
		return nil, gccl.Errorf(gccl.InvalidArgument, "Rank", "rank %d out of range (0..%d)", cfg.Rank, tnet.MaxRank-1)
	}
	if cfg.CommID == ([16]byte{}) || cfg.Secret == ([16]byte{}) {
		return nil, gccl.Errorf(gccl.InvalidArgument, "CommID", "the CommID or Secret is zero: set both, the same on every rank and secret from outsiders (comm derives them from the unique ID)")
	}
	if cfg.NetChunkSize < 1 || cfg.NetChunkSize > MaxNetChunkSize {
		return nil, gccl.Errorf(gccl.InvalidArgument, "NetChunkSize", "chunk of %d bytes out of range (1..%d)", cfg.NetChunkSize, MaxNetChunkSize)
	}
	c, err := selectProvider(cfg)
	if err != nil {
		return nil, err
	}
	allowed, err := topo.ThreadAffinity()
	if err != nil {
		env.Logger("NET").Debug("process affinity unknown", "err", err)
	}
	pl := cfg.place(c.devs, c.cands, c.explicit, allowed)
	prov, prop := c.prov, c.devs[pl.dev]
	e := &Endpoint{cfg: cfg, net: prov, dev: pl.dev, prop: prop, cpus: pl.cpus, used: map[[2]int]bool{}}
	if e.ln, err = prov.Listen(e.dev, e.netConfig()); err != nil {
		return nil, fmt.Errorf("network provider %s, device %s: %w", prov.Name(), prop.Name, err)
	}
	e.info = PeerInfo{Rank: cfg.Rank, HostHash: cfg.HostHash, NetName: prov.Name(), NetHandle: e.ln.Handle()}
	env.Logger("NET").Info("network provider", "rank", cfg.Rank, "provider", prov.Name(), "device", prop.Name, "why", pl.why,
		"transport", prop.Transport, "speed_mbps", prop.Speed, "cpus", pl.cpus.String(), "cpus_why", pl.cpusWhy)
	if !cfg.ShmDisable {
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		e.info.ShmPrefix = fmt.Sprintf("gccl-%d-r%d-%s", os.Getpid(), cfg.Rank, hex.EncodeToString(nonce[:]))
	}
	return e, nil
}

// netConfig is the provider's view of the endpoint.
func (e *Endpoint) netConfig() network.Config {
	return network.Config{CommID: e.cfg.CommID, Secret: e.cfg.Secret, Rank: e.cfg.Rank, Timeout: e.cfg.Timeout, CPUs: e.cpus}
}

// Provider names the network provider and device the endpoint uses.
func (e *Endpoint) Provider() (name string, device network.Properties) { return e.net.Name(), e.prop }

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
		e.mu.Lock()
		delete(e.used, [2]int{peer.Rank, channel}) // nothing was set up: it may be tried again
		e.mu.Unlock()
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
// listener, and stops the endpoint's goroutines. A connection whose stream
// broke is aborted (network.Aborter), not closed in order: its peer may be
// unreachable. The Conns close concurrently, so a close that waits for its
// peer costs one wait, not one per connection. Safe on nil and twice.
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
	errs := make([]error, len(conns)+1)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	errs[len(conns)] = e.ln.Close()
	return errors.Join(errs...)
}

// Abort closes the endpoint as Close does, but every network connection
// ends at once (network.Aborter) without waiting for its peer to
// acknowledge: for a communicator's Abort, which must return promptly
// even when peers are unreachable. Safe on nil, twice, and after Close.
func (e *Endpoint) Abort() error {
	if e == nil {
		return nil
	}
	e.aborting.Store(true)
	return e.Close()
}
