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
	return &Sender{socks: socks, chunk: chunk, timeout: o.Timeout}, nil
}

// Send writes p as frames spread over the sockets; it returns once every
// frame was handed to the kernel, so p may be reused.
func (s *Sender) Send(ctx context.Context, p []byte) error {
	if s.closed.Load() {
		return errClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if len(p) == 0 {
		return nil
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
	nchunks := (len(p) + s.chunk - 1) / s.chunk
	err := s.writeAll(p, nchunks)
	it.disarm()
	s.seq += uint64(nchunks)
	if err != nil {
		s.err = s.classify(ctx, deadline, err)
		return s.err
	}
	return nil
}

// writeAll writes the chunks of p, socket by socket in parallel.
func (s *Sender) writeAll(p []byte, nchunks int) error {
	n := min(len(s.socks), nchunks)
	if n == 1 {
		return s.writeSock(p, nchunks, 0, 1)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := 1; k < n; k++ {
		wg.Go(func() { errs[k] = s.writeSock(p, nchunks, k, n) })
	}
	errs[0] = s.writeSock(p, nchunks, 0, n)
	wg.Wait()
	return errors.Join(errs...)
}

// writeSock writes chunks first, first+step, ... of p. Chunk j carries
// sequence number s.seq+j and goes to socket (s.seq+j) mod len(socks).
func (s *Sender) writeSock(p []byte, nchunks, first, step int) error {
	var hdr [HeaderSize]byte
	for j := first; j < nchunks; j += step {
		payload := p[j*s.chunk : min(len(p), (j+1)*s.chunk)]
		seq := s.seq + uint64(j)
		header{length: len(payload), seq: seq, crc: crc32c(payload)}.put(hdr[:])
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
func (s *Sender) Recv(context.Context, int, func([]byte) error) error {
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
	return nil
}
