package bootstrap

import (
	"crypto/subtle"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

var itoa = strconv.Itoa

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
// and acknowledges it.
func (n *Net) admit(c net.Conn, h wire.PeerHello) error {
	from := int(h.From)
	if int(h.NRanks) != n.nranks || int(h.To) != n.rank || from == n.rank {
		return gccl.Errorf(gccl.InvalidArgument, "rank",
			"peer hello %d→%d of %d does not fit rank %d of %d", h.From, h.To, h.NRanks, n.rank, n.nranks)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed != nil {
		return n.closed
	}
	if n.in[from] != nil {
		return gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d connected twice", from)
	}
	if err := writeStatus(c, nil); err != nil {
		return err
	}
	n.in[from] = c
	n.notify()
	return nil
}

// read delivers peer p's messages until its connection ends.
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
		n.mu.Lock()
		if isBye(m) {
			n.left[p] = true
			n.mu.Unlock()
			continue
		}
		k := boxKey{peer: p, internal: m.Internal, tag: m.Tag}
		n.box[k] = append(n.box[k], m.Payload)
		n.notify()
		n.mu.Unlock()
	}
}

func (n *Net) markDead(p int, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed != nil || n.dead[p] != nil {
		return
	}
	var ge *gccl.Error
	if !errors.As(err, &ge) {
		err = gccl.Errorf(gccl.RemoteError, peerArg(p),
			"rank %d closed its bootstrap connection (it exited, aborted or crashed): %w", p, err)
	}
	n.dead[p] = err
	n.noteLoss(p, err)
	n.log.Info("bootstrap peer gone", "rank", n.rank, "peer", p, "err", err, "goodbye", n.left[p])
	n.notify()
}

// notify wakes every waiter; called with n.mu held.
func (n *Net) notify() {
	close(n.changed)
	n.changed = make(chan struct{})
}
