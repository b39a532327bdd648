package net

import (
	"context"
	"errors"
	"io"
	"math"
	gonet "net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport/internal/msg"
)

// readAhead is how many verified frames each socket's reader may queue.
const readAhead = 4

// frame is a verified frame, its payload in a pooled buffer, or the error
// that ended a socket's stream.
type frame struct {
	h    header
	buf  *[]byte
	data []byte
	err  error
}

// Receiver is the receiving end of a connection over one or more sockets.
type Receiver struct {
	mu       sync.Mutex
	queues   []chan frame
	socks    []gonet.Conn
	timeout  time.Duration
	seq      uint64
	err      error // sticky
	failSent bool  // Fail wrote its record
	closed   atomic.Bool
	done     chan struct{}
	wg       sync.WaitGroup
	pool     sync.Pool
}

// NewReceiver makes the receiving end over established sockets and starts
// one reader goroutine per socket; Close stops them.
func NewReceiver(socks []gonet.Conn, o Options) (*Receiver, error) {
	chunk, err := o.chunk()
	if err != nil {
		return nil, err
	}
	if len(socks) == 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "socks", "a connection needs at least one socket")
	}
	r := &Receiver{socks: socks, timeout: o.Timeout, done: make(chan struct{})}
	r.pool.New = func() any { b := make([]byte, chunk); return &b }
	r.queues = make([]chan frame, len(socks))
	for k := range socks {
		r.queues[k] = make(chan frame, readAhead)
		r.wg.Go(func() { r.read(k) })
	}
	return r, nil
}

// read is socket k's reader: frames k, k+n, k+2n, ... in order.
func (r *Receiver) read(k int) {
	sock, q := r.socks[k], r.queues[k]
	seq := uint64(k)
	var hdr [HeaderSize]byte
	for {
		f := r.readFrame(sock, hdr[:], seq)
		select {
		case q <- f:
		case <-r.done:
			return
		}
		if f.err != nil {
			return
		}
		seq += uint64(len(r.socks))
	}
}

// readFrame reads and verifies one frame.
func (r *Receiver) readFrame(sock gonet.Conn, hdr []byte, seq uint64) frame {
	if _, err := io.ReadFull(sock, hdr); err != nil {
		return frame{err: r.readErr(err, "the peer closed the connection")}
	}
	h, err := parseHeader(hdr, seq)
	if err != nil {
		return frame{err: err}
	}
	buf := r.pool.Get().(*[]byte)
	if cap(*buf) < h.length {
		*buf = make([]byte, h.length)
	}
	data := (*buf)[:h.length]
	if _, err := io.ReadFull(sock, data); err != nil {
		return frame{err: r.readErr(err, "truncated frame: the peer closed the connection mid-frame")}
	}
	if err := checkPayload(h, data); err != nil {
		return frame{err: err}
	}
	return frame{h: h, buf: buf, data: data}
}

func (r *Receiver) readErr(err error, what string) error {
	if r.closed.Load() {
		return errClosed
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		what = "truncated frame: the peer closed the connection mid-frame"
	}
	return gccl.Errorf(gccl.RemoteError, "net recv", "%s: %w", what, err)
}

// Recv receives the next message: it hands accept the descriptor and
// length from the message's first frame, then consume every payload byte
// in order, in pieces valid only during the call. An error from accept or
// consume ends Recv and is returned as is, and so is every later call's
// (the rest of the message is not read). A deadline before the message
// began leaves the stream intact: a later Recv takes the message.
func (r *Receiver) Recv(ctx context.Context, accept func(d msg.Desc, n int) error, consume func(piece []byte) error) error {
	if r.closed.Load() {
		return errClosed
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	f, err := r.next(ctx, &timer)
	if err != nil {
		return err
	}
	if f.h.flags&flagFirst == 0 {
		return r.broken(gccl.Errorf(gccl.RemoteError, "net recv", "frame %d does not start a message: the stream is corrupted", f.h.seq))
	}
	if f.h.msgLen > math.MaxInt32*uint64(MaxChunkSize) {
		return r.broken(gccl.Errorf(gccl.RemoteError, "net recv", "message of %d bytes: the stream is corrupted", f.h.msgLen))
	}
	n := int(f.h.msgLen)
	if err := accept(f.h.desc, n); err != nil {
		r.pool.Put(f.buf)
		return r.broken(err)
	}
	for first := true; ; first = false {
		if !first {
			if f, err = r.next(ctx, &timer); err != nil {
				return r.broken(err)
			}
			if f.h.flags != 0 {
				return r.broken(gccl.Errorf(gccl.RemoteError, "net recv", "frame %d starts a message with %d bytes of the last one missing: the stream is corrupted", f.h.seq, n))
			}
		}
		if len(f.data) > n {
			return r.broken(gccl.Errorf(gccl.RemoteError, "net recv", "frame %d carries %d bytes, %d left of the message: the stream is corrupted", f.h.seq, len(f.data), n))
		}
		var cerr error
		if len(f.data) > 0 {
			cerr = consume(f.data)
		}
		n -= len(f.data)
		r.pool.Put(f.buf)
		if cerr != nil {
			if n > 0 {
				return r.broken(cerr)
			}
			return cerr
		}
		if n == 0 {
			return nil
		}
	}
}

// broken makes err the stream's sticky error (unless one is set) and returns it.
func (r *Receiver) broken(err error) error {
	if r.err == nil {
		r.err = err
	}
	return err
}

// next waits for the frame with the next sequence number. A failure
// record is returned as its error (and is sticky).
func (r *Receiver) next(ctx context.Context, timer **time.Timer) (frame, error) {
	if r.err != nil {
		return frame{}, r.err
	}
	q := r.queues[r.seq%uint64(len(r.queues))]
	var f frame
	select {
	case f = <-q:
	default:
		deadline := wait.Deadline(ctx, r.timeout)
		if *timer == nil {
			*timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case f = <-q:
		case <-ctx.Done():
			return frame{}, wait.CtxErr(ctx, deadline, "net recv")
		case <-(*timer).C:
			return frame{}, wait.CtxErr(ctx, time.Now(), "net recv")
		case <-r.done:
			return frame{}, errClosed
		}
	}
	if f.err != nil {
		r.err = f.err
		return frame{}, f.err
	}
	r.seq++
	if f.h.flags&flagFail != 0 {
		r.err = failure(f.h, f.data, "net recv")
		r.pool.Put(f.buf)
		return frame{}, r.err
	}
	return f, nil
}

// Fail tells the sending peer, over the connection's first socket, that
// this end failed with err (it refused a message): the peer's Send fails
// with it. Later Recvs here return err.
func (r *Receiver) Fail(err error) {
	if err == nil || r.closed.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
	if r.failSent {
		return
	}
	r.failSent = true
	writeFailure(r.socks[0], 0, err)
}

// Send is not supported on the receiving end.
func (r *Receiver) Send(context.Context, msg.Desc, []byte) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Send on the receiving end of a socket connection")
}

// Close closes the sockets, stops the readers and waits for them; safe to
// call twice.
func (r *Receiver) Close() error {
	if r == nil || r.closed.Swap(true) {
		return nil
	}
	close(r.done)
	for _, c := range r.socks {
		_ = c.Close()
	}
	r.wg.Wait()
	r.mu.Lock() // wait for a Recv in flight to return
	r.mu.Unlock()
	return nil
}
