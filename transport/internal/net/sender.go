package net

import (
	"context"
	"errors"
	"io"
	gonet "net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport/internal/msg"
)

// Options tunes a connection. The zero value selects the defaults.
type Options struct {
	ChunkSize int           // payload bytes per frame; 0 = DefaultChunkSize
	Timeout   time.Duration // deadline of a call whose ctx has none; 0 = wait.DefaultTimeout
}

func (o Options) chunk() (int, error) {
	switch {
	case o.ChunkSize == 0:
		return DefaultChunkSize, nil
	case o.ChunkSize < 0 || o.ChunkSize > MaxChunkSize:
		return 0, gccl.Errorf(gccl.InvalidArgument, "ChunkSize", "chunk size %d out of range (1..%d)", o.ChunkSize, MaxChunkSize)
	}
	return o.ChunkSize, nil
}

var errClosed = gccl.Errorf(gccl.InvalidUsage, "conn", "use of a closed socket connection")

// Sender is the sending end of a connection over one or more sockets.
type Sender struct {
	mu      sync.Mutex
	socks   []gonet.Conn
	chunk   int
	timeout time.Duration
	seq     uint64
	err     error // sticky: once a send failed the stream is broken
	closed  atomic.Bool
	refused atomic.Pointer[error] // the receiver's failure record (Receiver.Fail)
	wg      sync.WaitGroup        // the back-channel reader
}

// NewSender makes the sending end over established sockets (all of them
// carry this direction's frames; they must not be used otherwise).
func NewSender(socks []gonet.Conn, o Options) (*Sender, error) {
	chunk, err := o.chunk()
	if err != nil {
		return nil, err
	}
	if len(socks) == 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "socks", "a connection needs at least one socket")
	}
	s := &Sender{socks: socks, chunk: chunk, timeout: o.Timeout}
	s.wg.Go(s.readBack)
	return s, nil
}

// readBack waits for the receiver's failure record on the first socket
// (the only bytes that travel back) and interrupts a Send in progress;
// it ends when the socket closes.
func (s *Sender) readBack() {
	var hdr [HeaderSize]byte
	sock := s.socks[0]
	if _, err := io.ReadFull(sock, hdr[:]); err != nil {
		return
	}
	h, err := parseHeader(hdr[:], 0)
	if err != nil || h.flags != flagFail {
		return
	}
	msg := make([]byte, h.length)
	if _, err := io.ReadFull(sock, msg); err != nil || checkPayload(h, msg) != nil {
		return
	}
	ferr := failure(h, msg, "net send")
	s.refused.Store(&ferr)
	for _, c := range s.socks {
		_ = c.SetWriteDeadline(time.Unix(1, 0))
	}
}

// Refusal is the receiver's failure record (it refused a message), nil if
// none came.
func (s *Sender) Refusal() error {
	if p := s.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// Send writes one message, descriptor d and p, as frames spread over the
// sockets (one frame when p is empty); it returns once every frame was
// handed to the kernel, so p may be reused.
func (s *Sender) Send(ctx context.Context, d msg.Desc, p []byte) error {
	if s.closed.Load() {
		return errClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Refusal(); err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	deadline := wait.Deadline(ctx, s.timeout)
	for _, c := range s.socks {
		_ = c.SetWriteDeadline(deadline)
	}
	it := interruptOn(ctx, func() {
		for _, c := range s.socks {
			_ = c.SetWriteDeadline(time.Unix(1, 0))
		}
	})
	nchunks := max(1, (len(p)+s.chunk-1)/s.chunk)
	err := s.writeAll(d, p, nchunks)
	it.disarm()
	s.seq += uint64(nchunks)
	if err != nil {
		s.err = s.classify(ctx, deadline, err)
		return s.err
	}
	return nil
}

// Fail sends err to the receiving peer as a failure record after the last
// message, so its Recv fails with it; if the stream is already broken it
// closes the sockets instead. Later Sends return err.
func (s *Sender) Fail(err error) {
	if err == nil || s.closed.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		for _, c := range s.socks {
			_ = c.Close()
		}
		return
	}
	writeFailure(s.socks[s.seq%uint64(len(s.socks))], s.seq, err)
	s.seq++
	s.err = err
}

// writeAll writes the chunks of p, socket by socket in parallel.
func (s *Sender) writeAll(d msg.Desc, p []byte, nchunks int) error {
	n := min(len(s.socks), nchunks)
	if n == 1 {
		return s.writeSock(d, p, nchunks, 0, 1)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := 1; k < n; k++ {
		wg.Go(func() { errs[k] = s.writeSock(d, p, nchunks, k, n) })
	}
	errs[0] = s.writeSock(d, p, nchunks, 0, n)
	wg.Wait()
	return errors.Join(errs...)
}

// writeSock writes chunks first, first+step, ... of p. Chunk j carries
// sequence number s.seq+j and goes to socket (s.seq+j) mod len(socks);
// chunk 0 carries the message's length and descriptor d.
func (s *Sender) writeSock(d msg.Desc, p []byte, nchunks, first, step int) error {
	var hdr [HeaderSize]byte
	for j := first; j < nchunks; j += step {
		payload := p[j*s.chunk : min(len(p), (j+1)*s.chunk)]
		seq := s.seq + uint64(j)
		h := header{length: len(payload), seq: seq, crc: crc32c(payload)}
		if j == 0 {
			h.flags, h.msgLen, h.desc = flagFirst, uint64(len(p)), d
		}
		h.put(hdr[:])
		bufs := gonet.Buffers{hdr[:], payload}
		if _, err := bufs.WriteTo(s.socks[seq%uint64(len(s.socks))]); err != nil {
			return err
		}
	}
	return nil
}

// classify turns a socket write error into a gccl error.
func (s *Sender) classify(ctx context.Context, deadline time.Time, err error) error {
	if s.closed.Load() {
		return errClosed
	}
	if rerr := s.Refusal(); rerr != nil {
		return rerr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if cerr := wait.CtxErr(ctx, deadline, "net send"); cerr != nil {
			return cerr
		}
		return gccl.Errorf(gccl.TimeoutError, "net send", "write deadline expired: %w", err)
	}
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, gonet.ErrClosed) {
		return gccl.Errorf(gccl.RemoteError, "net send", "the peer closed the connection: %w", err)
	}
	return gccl.Errorf(gccl.RemoteError, "net send", "writing to the peer failed: %w", err)
}

// Recv is not supported on the sending end.
func (s *Sender) Recv(context.Context, func(msg.Desc, int) error, func([]byte) error) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Recv on the sending end of a socket connection")
}

// Close closes the sockets (interrupting a blocked Send); safe to call twice.
func (s *Sender) Close() error {
	if s == nil || s.closed.Swap(true) {
		return nil
	}
	for _, c := range s.socks {
		_ = c.Close()
	}
	s.mu.Lock() // wait for a Send in flight to return
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
