package transport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport/network"
)

// netRecv is the receiving direction of a connection over a network
// provider. It keeps a ring of netDepth staging slots, each with a receive
// posted, so the provider reads up to netDepth transfers ahead of Recv
// (the old socket transport's read-ahead): a message that arrived before
// Recv was called is already in a slot.
type netRecv struct {
	mu   sync.Mutex
	rc   network.RecvComm
	ring *staging
	slot int // bytes of a slot
	reqs [netDepth]network.Request
	next int // the slot of the next transfer
	// unposted counts the slots just before next, in ring order, released
	// but not posted again because posting failed: they are posted, in
	// order so that the tags stay in order, before a take reaches them.
	unposted int
	tag      uint32 // the tag of the next receive to post
	timeout  time.Duration
	err      error // sticky
	ender    ender
	closed   bool
}

func newNetRecv(rc network.RecvComm, chunk int, timeout time.Duration, aborting *atomic.Bool) (*netRecv, error) {
	slot := max(chunk, netHeaderSize+netInline)
	st, err := newStaging(rc, netDepth*slot)
	if err != nil {
		return nil, err
	}
	r := &netRecv{rc: rc, ring: st, slot: slot, timeout: timeout, ender: ender{aborting: aborting}}
	ctx, deadline := context.Background(), time.Now().Add(timeout)
	for i := range netDepth {
		if err := r.repost(ctx, deadline, i); err != nil {
			st.free(rc)
			return nil, err
		}
	}
	return r, nil
}

// repost posts slot i's receive.
func (r *netRecv) repost(ctx context.Context, deadline time.Time, i int) error {
	reg := r.ring.region(i*r.slot, r.slot)
	q, err := post(ctx, deadline, "net recv", func() (network.Request, error) { return r.rc.Irecv(reg, r.ring.m, r.tag) })
	if err != nil {
		return err
	}
	r.tag++
	r.reqs[i] = q
	return nil
}

// take waits for the next slot's transfer and returns its bytes, valid
// until release.
func (r *netRecv) take(ctx context.Context, deadline time.Time) ([]byte, error) {
	if r.reqs[r.next] == nil {
		if err := r.flush(ctx, deadline); err != nil {
			return nil, err
		}
	}
	n, err := finish(ctx, deadline, "net recv", r.reqs[r.next])
	if err != nil {
		return nil, err
	}
	r.reqs[r.next] = nil
	return r.ring.b[r.next*r.slot:][:n], nil
}

// release moves to the next slot and posts the one take returned again.
// A failure to post is not this message's: the transfers already posted
// may still hold messages the peer sent before it closed or failed, so the
// error waits for the take that reaches the unposted slot.
func (r *netRecv) release(ctx context.Context, deadline time.Time) {
	r.next = (r.next + 1) % netDepth
	r.unposted++
	_ = r.flush(ctx, deadline)
}

// flush posts the unposted slots, oldest first, and stops at the first
// failure (a take that needs the slot tries again and reports it).
func (r *netRecv) flush(ctx context.Context, deadline time.Time) error {
	for r.unposted > 0 {
		i := (r.next - r.unposted + netDepth) % netDepth
		if err := r.repost(ctx, deadline, i); err != nil {
			return err
		}
		r.unposted--
	}
	return nil
}

// Recv receives the next message (see Conn). A deadline that expires
// before its first transfer arrived leaves the stream usable.
func (r *netRecv) Recv(ctx context.Context, accept func(d Desc, n int) error, consume func(piece []byte) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return errNetClosed
	case r.err != nil:
		return r.err
	}
	deadline := wait.Deadline(ctx, r.timeout)
	b, err := r.take(ctx, deadline)
	if err != nil {
		if gccl.Code(err) != gccl.TimeoutError {
			r.err = err
		}
		// A timeout leaves the stream usable, but its peer silent: a
		// close after it must not wait for that peer.
		r.ender.broken.Store(true)
		return err
	}
	if err := r.message(ctx, deadline, b, accept, consume); err != nil {
		r.err = err
		r.ender.broken.Store(true)
		return err
	}
	return nil
}

// message hands the message whose first transfer is b to accept and
// consume, taking the transfers that carry the rest.
func (r *netRecv) message(ctx context.Context, deadline time.Time, b []byte, accept func(Desc, int) error, consume func([]byte) error) error {
	h, err := parseNetHeader(b)
	if err != nil {
		return err
	}
	if h.flags == netFlagFail {
		code := gccl.Result(h.code)
		if code == gccl.Success {
			code = gccl.RemoteError
		}
		return gccl.Errorf(code, "net recv", "%s", b[netHeaderSize:])
	}
	length := int(h.length)
	if err := accept(h.desc, length); err != nil {
		return err
	}
	piece := b[netHeaderSize:]
	for rest := length; ; {
		if len(piece) > 0 {
			if err := consume(piece); err != nil {
				return err
			}
			rest -= len(piece)
		}
		r.release(ctx, deadline)
		if rest == 0 {
			return nil
		}
		if piece, err = r.take(ctx, deadline); err != nil {
			return err
		}
		if len(piece) == 0 || len(piece) > rest {
			return gccl.Errorf(gccl.RemoteError, "net recv", "a transfer of %d bytes where %d of the message remain: the stream is corrupted", len(piece), rest)
		}
	}
}

// Fail tells the sender that this end failed with err: through the
// provider's Failer where it has one (the sender's Send fails with err),
// else by closing the connection (the sender sees gccl.ErrRemote). Later
// Recvs return err.
func (r *netRecv) Fail(err error) {
	if err == nil {
		return
	}
	if f, ok := r.rc.(network.Failer); ok {
		f.Fail(err)
	} else {
		r.ender.broken.Store(true)
		_ = network.Abort(r.rc)
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// Send is not supported on the receiving direction.
func (r *netRecv) Send(context.Context, Desc, []byte) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Send on the receiving direction of a network connection")
}

// Close closes the RecvComm (a Recv in progress returns; aborting it where
// the stream broke or the endpoint aborts) and frees the staging ring.
// Safe twice.
func (r *netRecv) Close() error {
	err := r.ender.end(r.rc)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.ring.free(r.rc)
	return err
}
