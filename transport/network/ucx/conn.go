package ucx

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/internal/ucx"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/topo"
)

// closeLinger bounds how long Close waits for UCX to flush what was sent.
const closeLinger = 10 * time.Second

// abortGrace bounds every wait of an abort (Abort, network.Aborter): the
// forced closes of the connection's endpoints complete locally within it
// as the worker progresses, and nothing waits for the peer, which may sit
// behind a cut link and answer nothing, ever.
const abortGrace = 100 * time.Millisecond

// conn is what both ends of a connection share: its own worker (so tags
// match per connection and closing it ends everything of it), the side
// TCP socket that watches the peer, and the registrations.
type conn struct {
	p          *Provider
	dc         *devContext
	w          *ucx.Worker
	oob        net.Conn
	cfg        network.Config
	watcher    chan struct{} // closed when the watcher goroutine returns
	progressed chan struct{} // closed when the progress goroutine returns
	stopping   atomic.Bool
	aborted    chan struct{} // closed by abort
	abortOnce  sync.Once
	waiters    atomic.Int32  // requests' Waits past their first Test: the progress goroutine stands aside
	resume     chan struct{} // the progress goroutine's turn again (the last waiter left, or stopping)

	peerGone atomic.Bool           // the side socket reached EOF or failed
	peerBye  atomic.Int64          // sends the peer made before it closed; -1 = not closing
	refusal  atomic.Pointer[error] // the receiver's Fail, on the sending side
	acked    chan struct{}         // closed when the receiver acknowledged the bye
	ackOnce  sync.Once

	// The receiving side's close: it asks the sender to close its
	// endpoint (onClosing, on the sending side) and waits for that before
	// its worker goes, so that no wire-up between the two is in flight
	// when it does (UCX 1.13 builds with assertions abort on one).
	recvSide     bool
	peerEp       *ucx.Endpoint // the sender's endpoint on our worker: set by watch
	onClosing    func()
	closingAcked chan struct{}
	closingOnce  sync.Once

	mu      sync.Mutex
	closed  bool
	regs    map[*memHandle]bool
	pending map[*request]bool
	posted  int64 // sends posted (sender) / receives completed (receiver)
}

func newConn(p *Provider, dc *devContext, w *ucx.Worker, oob net.Conn, cfg network.Config, recvSide bool, onClosing func()) *conn {
	c := &conn{p: p, dc: dc, w: w, oob: oob, cfg: cfg, watcher: make(chan struct{}), progressed: make(chan struct{}), aborted: make(chan struct{}), resume: make(chan struct{}, 1), acked: make(chan struct{}), closingAcked: make(chan struct{}),
		regs: map[*memHandle]bool{}, pending: map[*request]bool{}}
	c.peerBye.Store(-1)
	c.recvSide, c.onClosing = recvSide, onClosing
	go c.watch()
	go c.progress()
	return c
}

// watch reads the side socket until it fails: a bye says how many sends
// the peer made before closing; the end of the socket, that the peer has
// gone (after its flush, or because it died).
func (c *conn) watch() {
	defer close(c.watcher)
	defer func() { _ = c.w.Signal() }() // a Wait asleep on the worker sees the peer gone now
	var b [9]byte
	for {
		_, err := c.oob.Read(b[:1])
		if err == nil && b[0] == msgFail {
			if err = c.readRefusal(); err == nil {
				_ = c.w.Signal() // pending sends fail now
				continue
			}
		}
		if err == nil && b[0] == msgAck {
			c.ackOnce.Do(func() { close(c.acked) })
			continue
		}
		if err == nil && b[0] == msgClosing && c.onClosing != nil {
			c.onClosing()
			_ = c.oob.SetWriteDeadline(time.Now().Add(closeLinger))
			_, _ = c.oob.Write([]byte{msgClosingAck})
			continue
		}
		if err == nil && b[0] == msgClosingAck {
			c.closingOnce.Do(func() { close(c.closingAcked) })
			continue
		}
		if err == nil && b[0] == msgWired {
			// The sender's endpoint is wired up: our wire-up reply has
			// arrived there. Take the endpoint UCX made for it, then let
			// what else of ours is in flight towards it go before it
			// may close.
			if err = c.adopt(); err != nil {
				c.peerGone.Store(true)
				return
			}
			_ = c.w.Flush(timeout(c.cfg))
			_ = c.oob.SetWriteDeadline(time.Now().Add(timeout(c.cfg)))
			_, _ = c.oob.Write([]byte{msgWiredAck})
			continue
		}
		if err != nil || b[0] != msgBye {
			c.peerGone.Store(true)
			return
		}
		_ = c.oob.SetReadDeadline(time.Now().Add(timeout(c.cfg)))
		if _, err := readFull(c.oob, b[1:]); err != nil {
			c.peerGone.Store(true)
			return
		}
		_ = c.oob.SetReadDeadline(time.Time{})
		c.peerBye.Store(int64(binary.LittleEndian.Uint64(b[1:])))
		_ = c.w.Signal() // receives no message will match fail now
		// The sender destroys its worker after this ack: first let
		// everything of ours towards it (wire-up replies included) go.
		_ = c.w.Flush(closeLinger)
		_ = c.oob.SetWriteDeadline(time.Now().Add(closeLinger))
		_, _ = c.oob.Write([]byte{msgAck})
	}
}

// adopt reads the rest of a msgWired, the sender's worker address, and
// takes the endpoint UCX created on our worker when the sender's wire-up
// request arrived: ucp_ep_create to the address of a worker that already
// connected to ours returns that endpoint (UCP's endpoint matching), not
// a new one. Closing it by force at shutdown is what ends our receives
// still inside a rendezvous with a sender that will never answer (a cut
// link): only discarding the endpoint's lanes purges them, and UCX aborts
// an assertion build when a worker is destroyed with one left
// (ucp_ep.c:437, "proto_reqs").
func (c *conn) adopt() error {
	_ = c.oob.SetReadDeadline(time.Now().Add(timeout(c.cfg)))
	defer c.oob.SetReadDeadline(time.Time{})
	var h [4]byte
	if _, err := readFull(c.oob, h[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n == 0 || n > maxWorkerAddr {
		return gccl.Errorf(gccl.RemoteError, "ucx wire-up", "worker address of %d bytes", n)
	}
	addr := make([]byte, n)
	if _, err := readFull(c.oob, addr); err != nil {
		return err
	}
	if !c.recvSide || c.peerEp != nil {
		return nil
	}
	ep, err := c.w.Connect(addr)
	if err != nil {
		return err
	}
	c.peerEp = ep
	return nil
}

// idleWake bounds how long the progress goroutine sleeps with no event.
const idleWake = 250 * time.Millisecond

// progress is the connection's progress while nobody waits for one of
// its requests: it sleeps on the worker's event fd (ucx.Worker.Wait) and
// progresses the worker when UCX has events, so that wire-up, the peer's
// sends and its flush move on while nobody tests a request here. While a
// request's Wait waits, that Wait sleeps on the event fd itself and
// progresses the worker when woken (no hand-off from this goroutine to
// it): this goroutine, woken by the same event, stands aside until the
// last waiter leaves (resume). An idle connection costs a wake-up every
// idleWake, no busy loop. It runs on Config.CPUs (topo.Pin) where the
// endpoint placed the connection.
func (c *conn) progress() {
	defer close(c.progressed)
	unpin, err := topo.Pin(c.cfg.CPUs)
	if err != nil {
		env.Logger("NET").Debug("ucx progress not placed", "cpus", c.cfg.CPUs.String(), "err", err)
	}
	defer unpin()
	for !c.stopping.Load() {
		if c.waiters.Load() > 0 {
			<-c.resume
			continue
		}
		if err := c.w.Wait(idleWake); err != nil {
			return
		}
	}
}

// waiting counts a Wait in (by 1) or out (by -1); the last one out
// resumes the progress goroutine.
func (c *conn) waiting(by int32) {
	if c.waiters.Add(by) == 0 {
		c.resumeProgress()
	}
}

// resumeProgress gives the progress goroutine its turn, if it stood aside.
func (c *conn) resumeProgress() {
	select {
	case c.resume <- struct{}{}:
	default: // a turn is pending already
	}
}

// readRefusal reads the rest of a msgFail: a result code, a length and
// the message, bounded.
func (c *conn) readRefusal() error {
	_ = c.oob.SetReadDeadline(time.Now().Add(timeout(c.cfg)))
	defer c.oob.SetReadDeadline(time.Time{})
	var h [3]byte
	if _, err := readFull(c.oob, h[:]); err != nil {
		return err
	}
	n := int(binary.LittleEndian.Uint16(h[1:]))
	if n > maxFailMsg {
		return gccl.Errorf(gccl.RemoteError, "ucx refusal", "%d bytes", n)
	}
	msg := make([]byte, n)
	if _, err := readFull(c.oob, msg); err != nil {
		return err
	}
	code := gccl.Result(h[0])
	if code == gccl.Success {
		code = gccl.RemoteError
	}
	err := error(gccl.Errorf(code, "ucx receiver", "the receiver refused: %s", msg))
	c.refusal.Store(&err)
	return nil
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// memHandle is a registration with one connection.
type memHandle struct {
	c   *conn
	r   network.Region
	mem *ucx.Mem // nil for an empty region
}

func (m *memHandle) Region() network.Region { return m.r }

// Register maps r with UCX (ucp_mem_map) for this connection.
func (c *conn) Register(r network.Region) (network.MemHandle, error) {
	if r.Kind&c.dc.dev.props.Memory == 0 || (r.Kind != network.MemHost && r.Kind != network.MemCUDA) {
		return nil, gccl.Errorf(gccl.InvalidArgument, "region", "memory kind %d is not one ucx can register here (device %s takes %d)", r.Kind, c.dc.dev.props.Name, c.dc.dev.props.Memory)
	}
	if r.Len < 0 || (r.Len > 0 && r.Ptr == nil) {
		return nil, gccl.Errorf(gccl.InvalidArgument, "region", "%d bytes at %p", r.Len, r.Ptr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed("register")
	}
	m := &memHandle{c: c, r: r}
	if r.Len > 0 {
		mem, err := c.dc.ctx.Map(r.Ptr, r.Len, r.Kind == network.MemCUDA)
		if err != nil {
			return nil, err
		}
		m.mem = mem
	}
	c.regs[m] = true
	return m, nil
}

// Deregister unmaps m.
func (c *conn) Deregister(mh network.MemHandle) error {
	m, ok := mh.(*memHandle)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok && m.c == c && c.closed {
		return nil // Close released it
	}
	if !ok || !c.regs[m] {
		return gccl.Errorf(gccl.InvalidArgument, "memory handle", "not a registration of this connection (deregistered already?)")
	}
	delete(c.regs, m)
	return c.dc.ctx.Unmap(m.mem)
}

// check validates a transfer of r inside m on this connection (lock held).
func (c *conn) check(op string, r network.Region, mh network.MemHandle) (*memHandle, error) {
	if c.closed {
		return nil, errClosed(op)
	}
	m, ok := mh.(*memHandle)
	if !ok || !c.regs[m] {
		return nil, gccl.Errorf(gccl.InvalidArgument, "memory handle", "%s: not a registration of this connection", op)
	}
	in := r.Len == 0 || (r.Kind == m.r.Kind && uintptr(r.Ptr) >= uintptr(m.r.Ptr) &&
		uintptr(r.Ptr)+uintptr(r.Len) <= uintptr(m.r.Ptr)+uintptr(m.r.Len))
	if r.Len < 0 || !in {
		return nil, gccl.Errorf(gccl.InvalidArgument, "region", "%s: %d bytes at %p are not inside the registration (%d bytes at %p)", op, r.Len, r.Ptr, m.r.Len, m.r.Ptr)
	}
	return m, nil
}

func errClosed(op string) error {
	return gccl.Errorf(gccl.InvalidUsage, "ucx "+op, "the connection is closed")
}

// request is a posted transfer of a connection.
type request struct {
	c    *conn
	r    *ucx.Request
	recv bool
	done bool
	n    int
	err  error
}

// Test progresses the connection's worker and reports r's state. A
// request that cannot finish because the peer closed or died ends with
// ErrRemote; one of a connection closed meanwhile with ErrInvalidUsage.
func (r *request) Test() (bool, int, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.done {
		return true, r.n, r.err
	}
	if c.closed {
		r.finish(0, errClosed("request"))
		return true, 0, r.err
	}
	c.settle(r)
	if !r.done {
		if err := c.peerFailure(r); err != nil {
			r.r.Release()
			r.finish(0, err)
		}
	}
	return r.done, r.n, r.err
}

// Wait blocks until r is done, within ctx (or the connection's timeout
// when ctx has none). It polls first, testing r on the caller's goroutine
// (each Test progresses the worker) and yielding the P in between, for
// the host's spin time (futex.SpinTime: GCCL_HOST_SPIN, none where the
// host's ranks outnumber half its CPUs under auto), as the socket
// provider's requests do; then it sleeps on the worker's events
// (ucx.Request.Sleep) and tests r again at each, while the progress
// goroutine stands aside. An expired wait is ErrTimeout and leaves r
// pending.
func (r *request) Wait(ctx context.Context) (int, error) {
	if done, n, err := r.Test(); done {
		return n, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout(r.c.cfg))
		defer cancel()
	}
	c := r.c
	c.waiting(1)
	defer c.waiting(-1)
	spin, start := futex.SpinTime(), time.Now()
	for spin > 0 && time.Since(start) < spin && ctx.Err() == nil {
		runtime.Gosched()
		if done, n, err := r.Test(); done {
			return n, err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = c.w.Signal() }) // a cancelled ctx wakes the sleep
	defer stop()
	dl, _ := ctx.Deadline()
	for {
		if done, n, err := r.Test(); done {
			return n, err
		}
		if ctx.Err() != nil {
			return 0, gccl.Errorf(gccl.TimeoutError, "ucx request", "not done: %w", ctx.Err())
		}
		if err := r.r.Sleep(min(time.Until(dl), idleWake)); err != nil {
			if done, n, err := r.Test(); done { // closed meanwhile
				return n, err
			}
			return 0, err
		}
	}
}

// settle tests r (progressing the worker), and on the receiving side every
// other pending receive too, so that the count of completed receives is
// current (lock held).
func (c *conn) settle(r *request) {
	if done, n, err := r.r.Test(); done {
		r.finish(n, c.remote(err))
	}
	if !r.recv || r.done || c.peerBye.Load() < 0 {
		return
	}
	for o := range c.pending {
		if done, n, err := o.r.Test(); done {
			o.finish(n, c.remote(err))
		}
	}
}

// remote says that a request failed because the peer went, where it did
// (its endpoint was closed under it, cancelling it).
func (c *conn) remote(err error) error {
	if err != nil && c.peerGone.Load() && gccl.Code(err) != gccl.RemoteError {
		return gccl.Errorf(gccl.RemoteError, "ucx connection", "the peer closed the connection: %w", err)
	}
	return err
}

// finish records r's end (lock held).
func (r *request) finish(n int, err error) {
	r.done, r.n, r.err = true, n, err
	delete(r.c.pending, r)
	if r.recv && err == nil {
		r.c.posted++
	}
}

// peerFailure says why pending r can no longer complete, or nil (lock held).
func (c *conn) peerFailure(r *request) error {
	if e := c.refusal.Load(); e != nil {
		return *e
	}
	bye := c.peerBye.Load()
	switch {
	case r.recv && bye >= 0 && c.posted >= bye:
		return gccl.Errorf(gccl.RemoteError, "ucx receive", "%w: the sender closed the connection after %d messages, all received", network.ErrPeerClosed, bye)
	case bye < 0 && c.peerGone.Load():
		c.w.Progress()
		if done, n, err := r.r.Test(); done {
			r.finish(n, err)
			return nil
		}
		return gccl.Errorf(gccl.RemoteError, "ucx connection", "the peer closed the connection or died")
	}
	return nil
}

// abort makes the connection's close, in progress or to come, end
// without its peer: no wait for an acknowledgement, every flush and close
// of UCX bounded by abortGrace (ucx.Worker.Hurry), endpoints closed by
// force. A peer behind a cut link would keep an orderly close waiting for
// closeLinger at each of its steps.
func (c *conn) abort() {
	c.abortOnce.Do(func() {
		c.w.Hurry(abortGrace)
		close(c.aborted)
	})
}

// aborting reports whether abort was called.
func (c *conn) aborting() bool {
	select {
	case <-c.aborted:
		return true
	default:
		return false
	}
}

// linger bounds a wait for the peer during a close: closeLinger, or
// abortGrace once aborting.
func (c *conn) linger() time.Duration {
	if c.aborting() {
		return abortGrace
	}
	return closeLinger
}

// awaitPeer waits for ack, the peer's end (the watcher's return), the
// linger or an abort, whichever comes first.
func (c *conn) awaitPeer(ack <-chan struct{}) {
	t := time.NewTimer(c.linger())
	defer t.Stop()
	select {
	case <-ack:
	case <-c.watcher:
	case <-t.C:
	case <-c.aborted:
	}
}

// shutdown releases everything of c once its ends are done (lock not held).
func (c *conn) shutdown() error {
	if c.recvSide {
		_ = c.oob.SetWriteDeadline(time.Now().Add(c.linger()))
		if _, err := c.oob.Write([]byte{msgClosing}); err == nil {
			c.awaitPeer(c.closingAcked)
		}
	}
	c.mu.Lock()
	for r := range c.pending {
		r.r.Release()
		r.finish(0, errClosed("request"))
	}
	var err error
	for m := range c.regs {
		if e := c.dc.ctx.Unmap(m.mem); e != nil && err == nil {
			err = e
		}
		delete(c.regs, m)
	}
	c.mu.Unlock()
	c.oob.Close()
	<-c.watcher
	// Force: our receives still pending end (ErrCanceled) as the worker
	// drains in Close, those inside a rendezvous included.
	_ = c.peerEp.Close(true, c.linger())
	c.stopping.Store(true)
	_ = c.w.Signal()
	c.resumeProgress()
	<-c.progressed
	c.w.Close()
	c.p.release(c.dc)
	return err
}
