package net

import (
	"context"
	"errors"
	"io"
	gonet "net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
)

// readAhead is how many verified frames each socket's reader may queue.
const readAhead = 4

// frame is a verified payload (in a pooled buffer) or the error that ended a
// socket's stream.
type frame struct {
	buf  *[]byte
	data []byte
	err  error
}

// Receiver is the receiving end of a connection over one or more sockets.
type Receiver struct {
	mu      sync.Mutex
	queues  []chan frame
	socks   []gonet.Conn
	timeout time.Duration
	seq     uint64
	cur     frame // partly consumed frame
	off     int
	err     error // sticky
	closed  atomic.Bool
	done    chan struct{}
	wg      sync.WaitGroup
	pool    sync.Pool
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
	return frame{buf: buf, data: data}
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

// Recv hands exactly n bytes to consume in order, in pieces valid only
// during the call. An error from consume ends Recv and is returned as is.
// A deadline leaves the stream intact: a later Recv continues where it was.
func (r *Receiver) Recv(ctx context.Context, n int, consume func(piece []byte) error) error {
	if n < 0 {
		return gccl.Errorf(gccl.InvalidArgument, "n", "negative byte count %d", n)
	}
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
	for n > 0 {
		if r.cur.data == nil {
			if err := r.next(ctx, &timer); err != nil {
				return err
			}
		}
		k := min(len(r.cur.data)-r.off, n)
		err := consume(r.cur.data[r.off : r.off+k])
		r.off += k
		n -= k
		if r.off == len(r.cur.data) {
			r.pool.Put(r.cur.buf)
			r.cur, r.off = frame{}, 0
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// next waits for the frame with the next sequence number.
func (r *Receiver) next(ctx context.Context, timer **time.Timer) error {
	if r.err != nil {
		return r.err
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
			return wait.CtxErr(ctx, deadline, "net recv")
		case <-(*timer).C:
			return wait.CtxErr(ctx, time.Now(), "net recv")
		case <-r.done:
			return errClosed
		}
	}
	if f.err != nil {
		r.err = f.err
		return f.err
	}
	r.cur, r.off = f, 0
	r.seq++
	return nil
}

// Send is not supported on the receiving end.
func (r *Receiver) Send(context.Context, []byte) error {
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
