package bootstrap

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

var itoa = strconv.Itoa

// link is what a rank holds of one peer: at most one connection it dialled
// and one the peer dialled (both when both dialled at once), and the one of
// them it sends on. The sending connection is chosen once and kept, so that
// messages of one tag arrive in order; either side reads both.
type link struct {
	send    *outConn
	in, out net.Conn
	dialing chan struct{} // closed when this rank's dial to the peer ends
}

type outConn struct {
	mu sync.Mutex
	c  net.Conn
}

// connected reports whether a connection to the peer exists; n.mu held.
func (l *link) connected() bool { return l != nil && l.send != nil }

// linkOf returns p's link, creating it; n.mu held.
func (n *Net) linkOf(p int) *link {
	l := n.links[p]
	if l == nil {
		l = &link{}
		n.links[p] = l
	}
	return l
}

// connect returns the connection to send to p on. If there is none it
// dials p when dial is set (once, however many callers wait), and
// otherwise waits for p to dial this rank. With all set (Init's ring,
// which needs every rank) the wait also fails once any peer is lost.
func (n *Net) connect(ctx context.Context, p int, dial, all bool) (*outConn, error) {
	for {
		n.mu.Lock()
		if err := n.peerErr(p, all); err != nil {
			n.mu.Unlock()
			return nil, err
		}
		l := n.linkOf(p)
		if l.connected() {
			n.mu.Unlock()
			return l.send, nil
		}
		if dial {
			n.startDial(p, l)
		}
		ch := n.changed
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctxErr(ctx, peerArg(p), fmt.Sprintf("rank %d waiting for a connection with rank %d", n.rank, p))
		}
	}
}

// startDial dials p in the background unless a dial is under way or done;
// n.mu held, the network open. The dial runs under the network's own
// timeout, not a caller's: a caller that gives up must not leave a
// handshake half done, which the peer would take for this rank's loss.
func (n *Net) startDial(p int, l *link) {
	if l.dialing != nil {
		return
	}
	l.dialing = make(chan struct{})
	n.wg.Go(func() {
		ctx, cancel := context.WithTimeout(n.stop, n.timeout)
		defer cancel()
		n.dial(ctx, p, l)
	})
}

// peerErr is why a wait on p must end: the network is closed, p is gone
// (its connection ended, or news of its loss came around the ring), or,
// with all set, any peer was lost; n.mu held. Another rank's loss does not
// end a wait on a live p: p may still deliver (what the lost rank sent
// before it went may already be on its way through p), and a p that
// cannot fails its own wait on the lost rank and tells this one (see
// gather.abandon) or aborts, which ends this wait at once.
func (n *Net) peerErr(p int, all bool) error {
	switch {
	case n.closed != nil:
		return n.closed
	case n.dead[p] != nil:
		return n.dead[p]
	case all && n.lostErr != nil:
		return n.lostErr
	}
	return nil
}

// dial connects to p, proving the secret, and registers the connection.
// A failure marks p unreachable (without counting it as lost: a peer that
// closed normally refuses connections too).
func (n *Net) dial(ctx context.Context, p int, l *link) {
	c, err := n.dialPeer(ctx, p)
	n.mu.Lock()
	defer n.mu.Unlock()
	close(l.dialing)
	n.notify()
	switch {
	case n.closed != nil:
		if c != nil {
			_ = c.Close()
		}
	case err != nil:
		if n.dead[p] == nil {
			n.dead[p] = err
		}
	default:
		l.out = c
		if l.send == nil {
			l.send = &outConn{c: c}
		}
		n.wg.Go(func() { n.read(p, c) })
	}
}

func (n *Net) dialPeer(ctx context.Context, p int) (net.Conn, error) {
	addr := string(n.addrs[p])
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, ioErr(ctx, err, peerArg(p), "connecting to rank "+itoa(p)+" at "+addr)
	}
	stop := watch(ctx, c)
	h := wire.PeerHello{NRanks: uint32(n.nranks), From: uint32(n.rank), To: uint32(p)}
	err = dialAuth(c, n.key, n.secret)
	if err == nil {
		err = wire.WriteFrame(c, wire.TypePeerHello, h.Encode())
	}
	if err == nil {
		err = readStatus(c)
	}
	stop()
	if err != nil {
		_ = c.Close()
		return nil, ioErr(ctx, err, peerArg(p), "handshake with rank "+itoa(p))
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// handshake authenticates one incoming connection and starts its reader.
func (n *Net) handshake(c net.Conn, authed func()) {
	n.mu.Lock()
	if n.closed != nil {
		n.mu.Unlock()
		_ = c.Close()
		return
	}
	n.pending[c] = struct{}{}
	n.mu.Unlock()
	_, err := acceptAuth(c, n.lookup)
	authed()
	var h wire.PeerHello
	if err == nil {
		h, err = readPeerHello(c, min(n.timeout, helloTimeout))
	}
	if err == nil {
		err = n.admit(c, h)
	}
	n.mu.Lock()
	delete(n.pending, c)
	n.mu.Unlock()
	if err != nil {
		if err == errWrongSecret {
			n.log.Error("rejected a peer connection presenting a wrong secret", "rank", n.rank, "from", c.RemoteAddr())
		} else {
			n.log.Warn("rejected a bootstrap peer connection", "rank", n.rank, "from", c.RemoteAddr(), "err", err)
		}
		reject(c, err)
		return
	}
	n.read(int(h.From), c)
}

// lookup gives the communicator's secret for its own key.
func (n *Net) lookup(k wire.Key) (wire.Secret, error) {
	if subtle.ConstantTimeCompare(k[:], n.key[:]) != 1 {
		return wire.Secret{}, gccl.Errorf(gccl.InvalidArgument, "uniqueId", "wrong communicator key")
	}
	return n.secret, nil
}

// readPeerHello reads an authenticated peer's hello.
func readPeerHello(c net.Conn, timeout time.Duration) (wire.PeerHello, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	typ, p, err := wire.ReadFrame(c, handshakeMax)
	if err != nil {
		return wire.PeerHello{}, err
	}
	if typ != wire.TypePeerHello {
		return wire.PeerHello{}, gccl.Errorf(gccl.InvalidArgument, "hello", "expected a peer hello, got %v", typ)
	}
	return wire.DecodePeerHello(p)
}

// admit checks a peer hello and, if it is good, registers the connection
// and acknowledges it. A peer dials a rank at most once.
func (n *Net) admit(c net.Conn, h wire.PeerHello) error {
	from := int(h.From)
	if int(h.NRanks) != n.nranks || int(h.To) != n.rank || from == n.rank {
		return gccl.Errorf(gccl.InvalidArgument, "rank",
			"peer hello %d→%d of %d does not fit rank %d of %d", h.From, h.To, h.NRanks, n.rank, n.nranks)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.peerErr(from, false); err != nil {
		return err
	}
	l := n.linkOf(from)
	if l.in != nil {
		return gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d connected twice", from)
	}
	if err := writeStatus(c, nil); err != nil {
		return err
	}
	l.in = c
	if l.send == nil {
		l.send = &outConn{c: c}
	}
	n.notify()
	return nil
}

// read delivers peer p's messages on c until the connection ends.
func (n *Net) read(p int, c net.Conn) {
	for {
		typ, b, err := wire.ReadFrame(c, wire.MaxPayload)
		if err == nil && typ != wire.TypeData {
			err = gccl.Errorf(gccl.RemoteError, peerArg(p), "unexpected %v message", typ)
		}
		var m wire.Data
		if err == nil {
			m, err = wire.DecodeData(b)
		}
		if err != nil {
			n.markDead(p, err)
			return
		}
		if n.control(p, m) {
			continue
		}
		n.mu.Lock()
		k := boxKey{peer: p, internal: m.Internal, tag: m.Tag}
		n.box[k] = append(n.box[k], m.Payload)
		n.notify()
		n.mu.Unlock()
	}
}

// markDead records that p's connection ended (err says how).
func (n *Net) markDead(p int, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed != nil || n.dead[p] != nil {
		return
	}
	var ge *gccl.Error
	if why := n.quit[p]; why != nil {
		err = gccl.Errorf(gccl.Code(why), peerArg(p), "rank %d gave up its init: %w", p, why)
	} else if !errors.As(err, &ge) {
		err = gccl.Errorf(gccl.RemoteError, peerArg(p),
			"rank %d closed its bootstrap connection (it exited, aborted or crashed): %w", p, err)
	}
	n.dead[p] = err
	n.log.Info("bootstrap peer gone", "rank", n.rank, "peer", p, "err", err, "goodbye", n.left[p])
	if !n.left[p] && !n.heard[p] {
		n.noteLoss(p, n.rank, p, err)
	}
	n.notify()
}

// notify wakes every waiter; called with n.mu held.
func (n *Net) notify() {
	close(n.changed)
	n.changed = make(chan struct{})
}

func peerArg(p int) string { return "peer " + itoa(p) }
