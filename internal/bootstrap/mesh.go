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

// accept takes the peers' connections until the listener is closed.
func (n *Net) accept() {
	for {
		c, err := n.ln.Accept()
		if err != nil {
			return
		}
		n.mu.Lock()
		if n.closed != nil {
			n.mu.Unlock()
			_ = c.Close()
			return
		}
		n.pending[c] = struct{}{}
		n.mu.Unlock()
		n.wg.Go(func() { n.handshake(c) })
	}
}

// handshake authenticates one incoming connection and starts its reader.
func (n *Net) handshake(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(min(n.timeout, helloTimeout)))
	typ, p, err := wire.ReadFrame(c, handshakeMax)
	if err == nil && typ != wire.TypePeerHello {
		err = gccl.Errorf(gccl.InvalidArgument, "hello", "expected a peer hello, got %v", typ)
	}
	var h wire.PeerHello
	if err == nil {
		h, err = wire.DecodePeerHello(p)
	}
	if err == nil {
		err = n.admit(c, h)
	}
	n.mu.Lock()
	delete(n.pending, c)
	n.mu.Unlock()
	if err != nil {
		n.log.Warn("rejected a bootstrap peer connection", "rank", n.rank, "from", c.RemoteAddr(), "err", err)
		reject(c, err)
		return
	}
	_ = c.SetDeadline(time.Time{})
	n.read(int(h.From), c)
}

// admit checks a peer hello and, if it is good, registers the connection
// and acknowledges it.
func (n *Net) admit(c net.Conn, h wire.PeerHello) error {
	if subtle.ConstantTimeCompare(h.Key[:], n.key[:]) != 1 || subtle.ConstantTimeCompare(h.Secret[:], n.secret[:]) != 1 {
		n.log.Error("rejected a peer connection presenting a wrong secret", "rank", n.rank, "from", c.RemoteAddr())
		return gccl.Errorf(gccl.InvalidArgument, "uniqueId", "wrong communicator key or secret")
	}
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
