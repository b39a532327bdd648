package net

import (
	"context"
	"io"
	"log/slog"
	gonet "net"
	"strconv"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/accept"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/wait"
)

// Bounds: the accepted sockets no Accept has claimed yet; the sockets in
// their handshake at once (more wait in the kernel's backlog), and how long
// a handshake (one round trip) may take.
const (
	maxPending       = 4096
	maxHandshakes    = 256
	handshakeTimeout = 10 * time.Second
)

type pendingKey struct{ rank, channel int }

// Listener is a rank's TCP listener for one communicator. It accepts sockets
// in the background, checks their hello, and parks them until Accept claims
// them by (dialling rank, channel).
type Listener struct {
	ln      gonet.Listener
	id      Identity
	rank    int
	timeout time.Duration

	mu       sync.Mutex
	pending  map[pendingKey][]gonet.Conn // indexed by the hello's socket index
	npending int
	shaking  map[gonet.Conn]struct{} // sockets in their handshake
	arrived  chan struct{}           // closed and replaced when a socket is parked
	rejected map[pendingKey]bool     // (rank, channel) nobody will accept
	closed   bool
	wg       sync.WaitGroup
}

// Listen opens a listener on ip (any port) for the given identity; rank is
// the listening rank. timeout bounds handshakes and waits whose ctx has no
// deadline.
func Listen(ip gonet.IP, id Identity, rank int, timeout time.Duration) (*Listener, error) {
	if rank < 0 || rank >= MaxRank {
		return nil, gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d out of range (0..%d)", rank, MaxRank-1)
	}
	ln, err := gonet.Listen("tcp", gonet.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "listen", "listening on %s: %w", ip, err)
	}
	if timeout <= 0 {
		timeout = wait.DefaultTimeout
	}
	l := &Listener{ln: ln, id: id, rank: rank, timeout: timeout,
		pending: map[pendingKey][]gonet.Conn{}, shaking: map[gonet.Conn]struct{}{}, arrived: make(chan struct{}),
		rejected: map[pendingKey]bool{}}
	l.wg.Go(func() {
		accept.Serve(ln, accept.Config{MaxPending: maxHandshakes, Go: l.wg.Go, Name: "transport rank " + strconv.Itoa(rank),
			Log: func() *slog.Logger { return env.Logger("NET") }}, l.handshake)
	})
	return l, nil
}

// Addr is the address peers dial ("ip:port").
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// TCPAddr is the address peers dial.
func (l *Listener) TCPAddr() *gonet.TCPAddr { return l.ln.Addr().(*gonet.TCPAddr) }

// handshake challenges a socket, checks its hello's proof and parks it, or
// rejects and closes it.
func (l *Listener) handshake(c gonet.Conn, authed func()) {
	keep := false
	defer func() {
		l.mu.Lock()
		delete(l.shaking, c)
		l.mu.Unlock()
		if !keep {
			c.Close()
		}
	}()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.shaking[c] = struct{}{}
	l.mu.Unlock()
	_ = c.SetDeadline(time.Now().Add(min(l.timeout, handshakeTimeout)))
	challenge := auth.NewNonce()
	if _, err := c.Write(challenge[:]); err != nil {
		return
	}
	b := make([]byte, helloSize)
	if _, err := io.ReadFull(c, b); err != nil {
		return
	}
	h, err := parseHello(b)
	if err != nil || !h.verify(l.id, challenge) {
		_, _ = c.Write([]byte{ackRejected})
		return
	}
	authed()
	if _, err := c.Write(ack(l.id, h, challenge)); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	setNoDelay(c)
	keep = l.park(c, h)
}

// park stores an accepted socket for Accept; false if it must be dropped.
func (l *Listener) park(c gonet.Conn, h hello) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed { // Close set pending to nil
		return false
	}
	k := pendingKey{h.rank, h.channel}
	socks := l.pending[k]
	if socks == nil {
		socks = make([]gonet.Conn, h.count)
		l.pending[k] = socks
	}
	if l.closed || l.rejected[k] || l.npending >= maxPending || len(socks) != h.count || socks[h.index] != nil {
		return false
	}
	socks[h.index] = c
	l.npending++
	close(l.arrived)
	l.arrived = make(chan struct{})
	return true
}

// Accept waits for the count sockets that rank dials for channel and returns
// them in socket order; count 0 takes as many as the dialer announced.
func (l *Listener) Accept(ctx context.Context, rank, channel, count int) ([]gonet.Conn, error) {
	deadline := wait.Deadline(ctx, l.timeout)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	what := "accept from rank " + strconv.Itoa(rank)
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, gccl.Errorf(gccl.InvalidUsage, "listener", "accept on a closed listener")
		}
		socks, ok := l.claim(pendingKey{rank, channel}, count)
		arrived := l.arrived
		l.mu.Unlock()
		if ok {
			return socks, nil
		}
		if socks != nil {
			return nil, gccl.Errorf(gccl.RemoteError, what, "peer dials %d sockets for channel %d, want %d: mismatched configuration", len(socks), channel, count)
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, wait.CtxErr(ctx, deadline, what)
		case <-timer.C:
			return nil, wait.CtxErr(ctx, time.Now(), what)
		}
	}
}

// claim takes the parked sockets of k when all count are there. With a count
// mismatch it returns them with ok false. Called with mu held.
func (l *Listener) claim(k pendingKey, count int) (socks []gonet.Conn, ok bool) {
	socks = l.pending[k]
	if socks == nil {
		return nil, false
	}
	if count == 0 {
		count = len(socks)
	}
	if len(socks) != count {
		return socks, false
	}
	for _, c := range socks {
		if c == nil {
			return nil, false
		}
	}
	delete(l.pending, k)
	l.npending -= count
	return socks, true
}

// Reject closes the sockets rank dialled (or will dial) for channel, so its
// sends fail with gccl.ErrRemote: this rank will never read them.
func (l *Listener) Reject(rank, channel int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	k := pendingKey{rank, channel}
	l.rejected[k] = true
	for _, c := range l.pending[k] {
		if c != nil {
			c.Close()
			l.npending--
		}
	}
	delete(l.pending, k)
}

// Close stops accepting, closes the parked and handshaking sockets and waits
// for the listener's goroutines. Safe to call twice.
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	_ = l.ln.Close()
	for _, socks := range l.pending {
		for _, c := range socks {
			if c != nil {
				c.Close()
			}
		}
	}
	l.pending = nil
	for c := range l.shaking {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
	return nil
}
