package ucx

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/internal/ucx"
	"github.com/gccl/gccl/transport/network"
)

// sendComm is the sending end: an endpoint to the receiver's worker.
type sendComm struct {
	*conn
	ep       *ucx.Endpoint
	epClosed bool // by remoteClosing (lock held)
}

// remoteClosing runs when the receiver closes: the endpoint is closed by
// force (pending sends fail with ErrRemote, later ones are refused) and
// the worker flushed, while the receiver waits to destroy its own.
//
// The flush runs without the connection's lock: towards a peer behind a
// cut link it lasts its whole bound, and Test must not wait for it.
func (s *sendComm) remoteClosing() {
	s.peerGone.Store(true)
	s.mu.Lock()
	if s.closed || s.epClosed {
		s.mu.Unlock()
		return
	}
	s.epClosed = true
	_ = s.ep.Close(true, closeLinger)
	s.mu.Unlock()
	_ = s.w.Flush(closeLinger)
}

// recvComm is the receiving end: the worker the sender's endpoint reaches,
// and for GPUDirect flushes an endpoint to itself.
type recvComm struct {
	*conn
	self *ucx.Endpoint // created by the first CUDA flush
}

// Connect authenticates with the listener whose handle is h on its side
// TCP socket, gets its worker address and creates an endpoint to it. It
// waits within ctx (or the config's timeout) for the handshake only: the
// listener's handshake runs whether or not anyone Accepts.
func (p *Provider) Connect(ctx context.Context, dev int, h network.Handle, cfg network.Config, channel int) (network.SendComm, error) {
	ap, err := decodeHandle(h)
	if err != nil {
		return nil, err
	}
	if channel < 0 || channel >= maxChannel || cfg.Rank < 0 || cfg.Rank >= maxRank {
		return nil, gccl.Errorf(gccl.InvalidArgument, "channel", "rank %d channel %d out of range", cfg.Rank, channel)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout(cfg))
		defer cancel()
	}
	dc, err := p.acquire(dev)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	oob, err := d.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		p.release(dc)
		return nil, dialError(ctx, ap.String(), err)
	}
	addr, err := dial(ctx, oob, cfg, network.Peer{Rank: cfg.Rank, Channel: channel})
	var w *ucx.Worker
	if err == nil {
		w, err = dc.ctx.NewWorker()
	}
	var ep *ucx.Endpoint
	if err == nil {
		if ep, err = w.Connect(addr); err != nil {
			w.Close()
		}
	}
	if err == nil {
		// Wire the endpoint up now, while both ends are sure to live (the
		// listener's side progresses from its handshake on): the flush
		// returns once the receiver's wire-up reply has arrived (see
		// ucx.Endpoint.Flush), and a close interrupting the wire-up
		// trips an assertion in UCX 1.12 and 1.13 builds.
		dl, _ := ctx.Deadline()
		if err = ep.Flush(time.Until(dl)); err == nil {
			err = wiredUp(ctx, oob, w)
		}
		if err != nil {
			_ = ep.Close(true, closeLinger)
			w.Close()
			err = gccl.Errorf(gccl.Code(err), "ucx connect", "wiring up the endpoint to %s: %w", ap, err)
		}
	}
	if err != nil {
		oob.Close()
		p.release(dc)
		return nil, err
	}
	s := &sendComm{ep: ep}
	s.conn = newConn(p, dc, w, oob, cfg, false, s.remoteClosing)
	return s, nil
}

// wiredUp tells the receiver that the endpoint is wired up, with w's
// address (see conn.adopt), and waits, within ctx, until its worker has
// flushed its side of the wire-up.
func wiredUp(ctx context.Context, oob net.Conn, w *ucx.Worker) error {
	addr, err := w.Address()
	if err != nil {
		return err
	}
	dl, _ := ctx.Deadline()
	_ = oob.SetDeadline(dl)
	defer oob.SetDeadline(time.Time{})
	var b [1]byte
	msg := binary.LittleEndian.AppendUint32([]byte{msgWired}, uint32(len(addr)))
	if _, err := oob.Write(append(msg, addr...)); err != nil {
		return handshakeError(ctx, err)
	}
	if _, err := io.ReadFull(oob, b[:]); err != nil {
		return handshakeError(ctx, err)
	}
	if b[0] != msgWiredAck {
		return gccl.Errorf(gccl.RemoteError, "ucx connect", "unexpected message %#x while wiring up", b[0])
	}
	return nil
}

func dialError(ctx context.Context, addr string, err error) error {
	if ctx.Err() != nil {
		return gccl.Errorf(gccl.TimeoutError, "ucx connect", "connecting to %s: %w", addr, err)
	}
	return gccl.Errorf(gccl.RemoteError, "ucx connect", "connecting to %s: %w", addr, err)
}

// dial runs the dialer's side of the handshake on oob.
func dial(ctx context.Context, oob net.Conn, cfg network.Config, me network.Peer) ([]byte, error) {
	dl, _ := ctx.Deadline()
	_ = oob.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = oob.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var challenge auth.Nonce
	if _, err := io.ReadFull(oob, challenge[:]); err != nil {
		return nil, handshakeError(ctx, err)
	}
	h := hello{peer: me}
	h.sign(cfg, challenge)
	if _, err := oob.Write(h.marshal()); err != nil {
		return nil, handshakeError(ctx, err)
	}
	addr, err := readAck(oob, cfg, h, challenge)
	if err != nil && (ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded)) {
		return nil, handshakeError(ctx, err)
	}
	_ = oob.SetDeadline(time.Time{})
	return addr, err
}

func handshakeError(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return gccl.Errorf(gccl.TimeoutError, "ucx connect", "handshake: %w", ctx.Err())
	}
	return gccl.Errorf(gccl.RemoteError, "ucx connect", "handshake: %w", err)
}

// Isend posts the send of r with tag; nil, nil when InFlight requests are
// pending already.
func (s *sendComm) Isend(r network.Region, mh network.MemHandle, tag uint32) (network.Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.check("isend", r, mh)
	if err != nil {
		return nil, err
	}
	if e := s.refusal.Load(); e != nil {
		return nil, *e
	}
	if s.peerGone.Load() {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx isend", "the receiver closed the connection or died")
	}
	if len(s.pending) >= InFlight {
		return nil, nil
	}
	ur, err := s.ep.Send(r.Ptr, r.Len, uint64(tag), m.mem, r.Kind == network.MemCUDA)
	if err != nil {
		return nil, err
	}
	s.posted++
	req := &request{c: s.conn, r: ur}
	s.pending[req] = true
	return req, nil
}

// Close tells the receiver how many messages were sent, flushes them
// (closing the endpoint, within closeLinger; pending sends are cancelled)
// and releases everything.
func (s *sendComm) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	epClosed := s.epClosed
	pending := len(s.pending)
	n := s.posted - int64(pending) // pending sends are cancelled below
	s.mu.Unlock()
	var err error
	// A flushing close needs the receiver, and UCX must not be left with
	// sends in flight when the worker goes: with the receiver gone or
	// refusing, sends pending, or an abort, the endpoint is closed by
	// force, which cancels them.
	force := s.peerGone.Load() || s.refusal.Load() != nil || pending > 0 || s.aborting()
	if !epClosed {
		err = s.ep.Close(force, min(timeout(s.cfg), closeLinger))
	}
	if gccl.Code(err) == gccl.RemoteError || s.aborting() {
		err = nil // the receiver left first, or nobody waits for it: nothing more to flush to it
	}
	// Only now, with the endpoint closed, the bye: the receiver flushes
	// its worker towards ours, what the close sent included, and
	// acknowledges; ours goes after that (or once the receiver is gone,
	// or at once for an abort).
	b := binary.LittleEndian.AppendUint64([]byte{msgBye}, uint64(n))
	_ = s.oob.SetWriteDeadline(time.Now().Add(s.linger()))
	if _, werr := s.oob.Write(b); werr == nil {
		s.awaitPeer(s.acked)
	}
	if e := s.shutdown(); err == nil {
		err = e
	}
	return err
}

// Abort ends the connection without waiting for the receiver
// (network.Aborter): the endpoint is closed by force, the bye is sent but
// not waited for, and the worker goes within abortGrace. Called during a
// Close, it cuts that Close's waits short.
func (s *sendComm) Abort() error {
	s.abort()
	return s.Close()
}

// Irecv posts a receive of at most r.Len bytes with tag; nil, nil when
// InFlight requests are pending already.
func (c *recvComm) Irecv(r network.Region, mh network.MemHandle, tag uint32) (network.Request, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.check("irecv", r, mh)
	if err != nil {
		return nil, err
	}
	if len(c.pending) >= InFlight {
		return nil, nil
	}
	ur, err := c.w.Recv(r.Ptr, r.Len, uint64(tag), m.mem, r.Kind == network.MemCUDA)
	if err != nil {
		return nil, err
	}
	req := &request{c: c.conn, r: ur, recv: true}
	c.pending[req] = true
	return req, nil
}

// Flush makes what a completed Irecv wrote into CUDA memory visible to
// the GPU: a one-byte RDMA read of the region through an endpoint to the
// connection's own worker, as NCCL's UCX plugin does (reads are ordered
// after the NIC's earlier writes). Host memory needs nothing.
func (c *recvComm) Flush(r network.Region, mh network.MemHandle) (network.Request, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.check("flush", r, mh)
	if err != nil {
		return nil, err
	}
	if (r.Kind != network.MemCUDA && !c.p.flushHost) || r.Len == 0 {
		return doneRequest{}, nil
	}
	if c.self == nil {
		addr, err := c.w.Address()
		if err != nil {
			return nil, err
		}
		if c.self, err = c.w.Connect(addr); err != nil {
			return nil, err
		}
	}
	scratch := make([]byte, 8)
	ur, err := c.self.ReadBack(m.mem, r.Ptr, unsafe.Pointer(&scratch[0]))
	if err != nil {
		return nil, err
	}
	req := &request{c: c.conn, r: ur}
	c.pending[req] = true
	return req, nil
}

// Refusal is the failure the receiver sent with Fail, nil if none came.
func (s *sendComm) Refusal() error {
	if e := s.refusal.Load(); e != nil {
		return *e
	}
	return nil
}

// Fail tells the sender that this end refused a message because of err:
// its pending and later Isends fail with err's code and message.
func (c *recvComm) Fail(err error) {
	msg := []byte(err.Error())
	if len(msg) > maxFailMsg {
		msg = msg[:maxFailMsg]
	}
	b := []byte{msgFail, byte(gccl.Code(err))}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(msg)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	_ = c.oob.SetWriteDeadline(time.Now().Add(closeLinger))
	_, _ = c.oob.Write(append(b, msg...))
}

// Close cancels pending receives and releases everything.
func (c *recvComm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	if c.self != nil {
		_ = c.self.Close(true, c.linger())
	}
	return c.shutdown()
}

// Abort ends the connection without waiting for the sender
// (network.Aborter): no closing handshake, the worker goes within
// abortGrace. Called during a Close, it cuts that Close's waits short.
func (c *recvComm) Abort() error {
	c.abort()
	return c.Close()
}

// doneRequest is a request that was done when posted.
type doneRequest struct{}

func (doneRequest) Test() (bool, int, error)          { return true, 0, nil }
func (doneRequest) Wait(context.Context) (int, error) { return 0, nil }

var (
	_ network.Waiter  = (*request)(nil)
	_ network.Waiter  = doneRequest{}
	_ network.Failer  = (*recvComm)(nil)
	_ network.Refuser = (*sendComm)(nil)
	_ network.Aborter = (*sendComm)(nil)
	_ network.Aborter = (*recvComm)(nil)
)
