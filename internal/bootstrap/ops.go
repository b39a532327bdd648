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
// arrive in order. It returns once data is handed to the socket.
func (n *Net) Send(ctx context.Context, peer, tag int, data []byte) error {
	if err := n.checkPeer(peer); err != nil {
		return err
	}
	return n.send(ctx, peer, wire.Data{Tag: uint64(tag), Payload: data})
}

// Recv returns the next message that peer sent with tag.
func (n *Net) Recv(ctx context.Context, peer, tag int) ([]byte, error) {
	if err := n.checkPeer(peer); err != nil {
		return nil, err
	}
	ctx, cancel := withDeadline(ctx, n.timeout)
	defer cancel()
	return n.recv(ctx, boxKey{peer: peer, tag: uint64(tag)})
}

// AllGather sends mine to every rank and returns every rank's contribution,
// indexed by rank. Contributions may differ in length.
func (n *Net) AllGather(ctx context.Context, mine []byte) ([][]byte, error) {
	if err := n.usable(); err != nil {
		return nil, err
	}
	ctx, cancel := withDeadline(ctx, n.timeout)
	defer cancel()
	tag := n.seq.Add(1)
	for p := range n.nranks {
		if p != n.rank {
			if err := n.send(ctx, p, wire.Data{Internal: true, Tag: tag, Payload: mine}); err != nil {
				return nil, err
			}
		}
	}
	all := make([][]byte, n.nranks)
	all[n.rank] = append([]byte{}, mine...)
	for p := range n.nranks {
		if p == n.rank {
			continue
		}
		b, err := n.recv(ctx, boxKey{peer: p, internal: true, tag: tag})
		if err != nil {
			return nil, n.nameMissing(err, tag, all)
		}
		all[p] = b
	}
	return all, nil
}

// Barrier returns once every rank has entered it.
func (n *Net) Barrier(ctx context.Context) error {
	_, err := n.AllGather(ctx, nil)
	return err
}

// nameMissing rewrites a timeout to list every rank whose contribution to
// collective tag has not arrived.
func (n *Net) nameMissing(err error, tag uint64, got [][]byte) error {
	if gccl.Code(err) != gccl.TimeoutError {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var missing []int
	for p := range n.nranks {
		if p != n.rank && got[p] == nil && len(n.box[boxKey{peer: p, internal: true, tag: tag}]) == 0 {
			missing = append(missing, p)
		}
	}
	return gccl.Errorf(gccl.TimeoutError, "ranks",
		"rank %d: bootstrap collective #%d got nothing from ranks %v before the deadline (are they stuck, or calling collectives in another order?)",
		n.rank, tag, missing)
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

func (n *Net) send(ctx context.Context, p int, m wire.Data) error {
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
	n.mu.Lock()
	o, dead := n.out[p], n.dead[p]
	n.mu.Unlock()
	if dead != nil {
		return dead
	}
	if o == nil {
		return n.usable()
	}
	ctx, cancel := withDeadline(ctx, n.timeout)
	defer cancel()
	o.mu.Lock()
	defer o.mu.Unlock()
	stop := watchWrite(ctx, o.c)
	err := wire.WriteFrame(o.c, wire.TypeData, m.Encode())
	stop()
	if err != nil {
		if cerr := n.usable(); cerr != nil {
			return cerr
		}
		return ioErr(ctx, err, peerArg(p), fmt.Sprintf("rank %d sending to rank %d", n.rank, p))
	}
	return nil
}

// watchWrite is watch for the write side only, leaving reads untouched.
func watchWrite(ctx context.Context, c net.Conn) func() {
	d, _ := ctx.Deadline()
	_ = c.SetWriteDeadline(d)
	stop := context.AfterFunc(ctx, func() { _ = c.SetWriteDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

func (n *Net) recv(ctx context.Context, k boxKey) ([]byte, error) {
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
		closed, dead, ch := n.closed, n.dead[k.peer], n.changed
		n.mu.Unlock()
		switch {
		case closed != nil:
			return nil, closed
		case dead != nil:
			return nil, dead
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
	n.notify()
	conns := append([]net.Conn{}, n.in...)
	for c := range n.pending {
		conns = append(conns, c)
	}
	for _, o := range n.out {
		if o != nil {
			conns = append(conns, o.c)
		}
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
