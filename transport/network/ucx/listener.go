package ucx

import (
	"context"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/accept"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/netif"
	"github.com/gccl/gccl/transport/network"
)

// maxPending bounds the handshakes a listener runs at once.
const maxPending = 16

// listener accepts connections on one device: a TCP socket for the
// handshakes, where every arrival proves the secret before it gets a
// worker, and the arrivals parked until Accept names them.
type listener struct {
	p       *Provider
	dc      *devContext
	cfg     network.Config
	ln      net.Listener
	handle  network.Handle
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
	changed chan struct{} // closed and replaced whenever arrived changes
	arrived map[network.Peer]*arrival
	reject  map[network.Peer]bool
	// shaking: the handshakes in progress; true once one has a worker
	// (Close then lets it finish and close its arrival in order, instead
	// of closing its socket under it: see handshake).
	shaking map[net.Conn]bool
}

// arrival is an authenticated connection nobody has accepted yet. Its
// worker progresses already (the sender may send, or close, before the
// Accept).
type arrival = conn

// Listen opens a listener on device dev: a TCP socket on the address
// GCCL_SOCKET_IFNAME chooses, which the handle carries.
func (p *Provider) Listen(dev int, cfg network.Config) (network.Listener, error) {
	dc, err := p.acquire(dev)
	if err != nil {
		return nil, err
	}
	ip, err := netif.ListenAddr(env.Get().SocketIfname)
	if err != nil {
		p.release(dc)
		return nil, err
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		p.release(dc)
		return nil, gccl.Errorf(gccl.SystemError, "ucx listen", "listening on %v: %w", ip, err)
	}
	l := &listener{p: p, dc: dc, cfg: cfg, ln: ln, changed: make(chan struct{}),
		arrived: map[network.Peer]*arrival{}, reject: map[network.Peer]bool{}, shaking: map[net.Conn]bool{}}
	l.handle = encodeHandle(ln.Addr().(*net.TCPAddr).AddrPort())
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		accept.Serve(ln, accept.Config{MaxPending: maxPending, Name: "ucx " + ln.Addr().String(),
			Go: func(f func()) { l.wg.Add(1); go func() { defer l.wg.Done(); f() }() }},
			func(c net.Conn, done func()) { l.handshake(c) })
	}()
	return l, nil
}

func (l *listener) Handle() network.Handle { return l.handle }

// handshake authenticates one arrival and parks it; anything wrong closes
// the socket and forgets it.
func (l *listener) handshake(c net.Conn) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return
	}
	l.shaking[c] = false
	l.mu.Unlock()
	a, peer := l.authenticate(c)
	l.mu.Lock()
	delete(l.shaking, c)
	if a == nil {
		l.mu.Unlock()
		c.Close()
		return
	}
	if l.closed {
		// The sender has our worker's address and may be wiring its
		// endpoint up: the arrival's shutdown asks it over the side
		// socket, which the listener's Close left open, and waits for its
		// Connect to finish or fail, so that our worker does not go with
		// a wire-up reply in flight.
		l.mu.Unlock()
		_ = a.shutdown()
		return
	}
	l.arrived[peer] = a
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *listener) authenticate(c net.Conn) (*arrival, network.Peer) {
	_ = c.SetDeadline(time.Now().Add(timeout(l.cfg)))
	challenge := auth.NewNonce()
	if _, err := c.Write(challenge[:]); err != nil {
		return nil, network.Peer{}
	}
	b := make([]byte, helloSize)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, network.Peer{}
	}
	h, err := parseHello(b)
	if err != nil || !h.verify(l.cfg, challenge) {
		return nil, network.Peer{}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, network.Peer{}
	}
	refused := l.reject[h.peer] || l.arrived[h.peer] != nil
	if !refused {
		l.shaking[c] = true // from now on Close leaves the socket to us
	}
	l.mu.Unlock()
	if refused {
		_, _ = c.Write([]byte{ackRejected})
		return nil, network.Peer{}
	}
	w, err := l.dc.ctx.NewWorker()
	if err != nil {
		return nil, network.Peer{}
	}
	addr, err := w.Address()
	if err == nil {
		err = writeAck(c, l.cfg, h, challenge, addr)
	}
	if err != nil {
		w.Close()
		return nil, network.Peer{}
	}
	_ = c.SetDeadline(time.Time{})
	l.p.retain(l.dc)
	a := newConn(l.p, l.dc, w, c, l.cfg, true, nil)
	return a, h.peer
}

// Accept waits within ctx (or the config's timeout when ctx has no
// deadline) for from's connection.
func (l *listener) Accept(ctx context.Context, from network.Peer) (network.RecvComm, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout(l.cfg))
		defer cancel()
	}
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, gccl.Errorf(gccl.InvalidUsage, "ucx accept", "the listener is closed")
		}
		if a := l.arrived[from]; a != nil {
			delete(l.arrived, from)
			l.mu.Unlock()
			return &recvComm{conn: a}, nil
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, gccl.Errorf(gccl.TimeoutError, "ucx accept", "no connection from rank %d channel %d: %w", from.Rank, from.Channel, ctx.Err())
		}
	}
}

// Reject closes from's connection if it has arrived, and refuses it when
// it arrives later.
func (l *listener) Reject(from network.Peer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.arrived[from]; a != nil {
		delete(l.arrived, from)
		go a.shutdown() // not under l.mu: it waits for the connection's goroutines
	}
	l.reject[from] = true
}

// Close stops accepting, closes the connections nobody accepted and
// releases the device's context (once the accepted ones are closed too).
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	err := l.ln.Close()
	for c, working := range l.shaking {
		if !working {
			c.Close()
		}
	}
	close(l.changed)
	l.mu.Unlock()
	l.wg.Wait()
	var wg sync.WaitGroup // each may wait for its sender: all at once
	for _, a := range l.arrived {
		wg.Go(func() { _ = a.shutdown() })
	}
	wg.Wait()
	l.arrived = nil
	l.p.release(l.dc)
	if err != nil {
		return gccl.Errorf(gccl.SystemError, "ucx listener", "closing: %w", err)
	}
	return nil
}
