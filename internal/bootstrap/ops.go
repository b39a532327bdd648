package bootstrap

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

// Send queues data for peer's Recv with the same tag. Messages of one tag
// arrive in order. It returns once data is handed to the socket; the first
// Send or Recv between two ranks connects them.
func (n *Net) Send(ctx context.Context, peer, tag int, data []byte) error {
	if err := n.checkPeer(peer); err != nil {
		return err
	}
	ctx, cancel := withDeadline(ctx, n.timeout)
	defer cancel()
	return n.send(ctx, peer, true, wire.Data{Tag: uint64(tag), Payload: data})
}

// Recv returns the next message that peer sent with tag.
func (n *Net) Recv(ctx context.Context, peer, tag int) ([]byte, error) {
	if err := n.checkPeer(peer); err != nil {
		return nil, err
	}
	ctx, cancel := withDeadline(ctx, n.timeout)
	defer cancel()
	return n.recv(ctx, boxKey{peer: peer, tag: uint64(tag)}, true)
}

func (n *Net) checkPeer(peer int) error {
	if peer < 0 || peer >= n.nranks {
		return gccl.Errorf(gccl.InvalidArgument, "peer", "peer %d is out of range [0, %d)", peer, n.nranks)
	}
	return n.usable()
}

func (n *Net) usable() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// send writes m to p, connecting first (see connect for dial); ctx has a
// deadline.
func (n *Net) send(ctx context.Context, p int, dial bool, m wire.Data) error {
	if len(m.Payload) > MaxMessage {
		return gccl.Errorf(gccl.InvalidArgument, "data", "%d bytes exceed the bootstrap message limit of %d", len(m.Payload), MaxMessage)
	}
	if p == n.rank {
		n.mu.Lock()
		defer n.mu.Unlock()
		k := boxKey{peer: p, internal: m.Internal, tag: m.Tag}
		n.box[k] = append(n.box[k], append([]byte{}, m.Payload...))
		n.notify()
		return nil
	}
	o, err := n.connect(ctx, p, dial, false)
	if err != nil {
		return err
	}
	if err := o.write(ctx, m); err != nil {
		if cerr := n.usable(); cerr != nil {
			return cerr
		}
		return ioErr(ctx, err, peerArg(p), fmt.Sprintf("rank %d sending to rank %d", n.rank, p))
	}
	return nil
}

// write sends one message on o within ctx's deadline.
func (o *outConn) write(ctx context.Context, m wire.Data) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	stop := watchWrite(ctx, o.c)
	defer stop()
	return wire.WriteData(o.c, &m)
}

// watchWrite is watch for the write side only, leaving reads untouched.
func watchWrite(ctx context.Context, c net.Conn) func() {
	d, _ := ctx.Deadline()
	_ = c.SetWriteDeadline(d)
	stop := context.AfterFunc(ctx, func() { _ = c.SetWriteDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// recv returns the next message of k; a message already received is
// returned even when k.peer is gone since. With dial set, a wait for a peer this
// rank has no connection with dials it: a peer that is gone then fails the
// wait at once (its listener refuses) instead of at the deadline.
func (n *Net) recv(ctx context.Context, k boxKey, dial bool) ([]byte, error) {
	for {
		n.mu.Lock()
		if q := n.box[k]; len(q) > 0 {
			n.box[k] = q[1:]
			if len(q) == 1 {
				delete(n.box, k)
			}
			n.mu.Unlock()
			return q[0], nil
		}
		err := n.peerErr(k.peer, false)
		if err == nil && dial && k.peer != n.rank {
			if l := n.linkOf(k.peer); !l.connected() {
				n.startDial(k.peer, l)
			}
		}
		ch := n.changed
		n.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctxErr(ctx, peerArg(k.peer), fmt.Sprintf("rank %d waiting for a message from rank %d", n.rank, k.peer))
		}
	}
}

// Close shuts the network down; later calls on n fail with InvalidUsage.
// Peers see this rank's connections end after a goodbye, so they do not
// count it as lost (see Lost). Safe to call twice and on nil.
func (n *Net) Close() error {
	if n == nil {
		return nil
	}
	n.sayGoodbye()
	return n.shut(gccl.Errorf(gccl.InvalidUsage, "comm", "the bootstrap network was closed"))
}

// Abort is Close for failures: it returns promptly, interrupting every wait
// on n, and peers blocked on this rank get RemoteError; with no goodbye,
// peers count this rank as lost.
func (n *Net) Abort() error {
	return n.shut(gccl.Errorf(gccl.InvalidUsage, "comm", "the bootstrap network was aborted"))
}

func (n *Net) shut(why error) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	if n.closed != nil {
		n.mu.Unlock()
		return nil
	}
	n.closed = why
	n.halt() // background dials
	n.notify()
	var conns []net.Conn
	for c := range n.pending {
		conns = append(conns, c)
	}
	for _, l := range n.links {
		conns = append(conns, l.in, l.out)
	}
	n.mu.Unlock()
	if n.ln != nil {
		_ = n.ln.Close()
	}
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
	n.wg.Wait()
	return nil
}
