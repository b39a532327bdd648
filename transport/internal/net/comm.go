package net

import (
	"errors"
	"io"
	gonet "net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/topo"
)

// Options tunes a connection. The zero value selects the defaults.
type Options struct {
	// Threads is the number of helper goroutines that move a connection's
	// pieces (GCCL_SOCKET_NTHREADS); data socket k belongs to helper
	// k mod Threads. 0 = one per data socket.
	Threads int
	// Timeout bounds a Wait whose ctx has no deadline; 0 = wait.DefaultTimeout.
	Timeout time.Duration
	// CPUs are where the helper goroutines run (topo.Pin: each keeps an
	// OS thread of its own, on these CPUs); nil = wherever the runtime
	// puts them.
	CPUs topo.CPUSet
	// Checksum makes the sender put a CRC32C of every payload in its frame
	// header, and the receiver verify it and refuse payloads without one
	// (GCCL_SOCKET_CHECKSUM): off, a payload relies on TCP's own checksum,
	// as in NCCL and MPI; frame headers carry their CRC32C either way.
	Checksum bool
}

var errClosed = gccl.Errorf(gccl.InvalidUsage, "conn", "use of a closed socket connection")

// conn is what both ends of a connection share: the control socket
// (socket 0: transfer headers, small transfers inline, failure records
// back), the data sockets (pieces of larger transfers), the requests, the
// helpers' queues and the sticky error that ends the connection.
type conn struct {
	ctrl     gonet.Conn
	data     []gonet.Conn
	queues   []*pieceQueue // one per helper goroutine
	free     chan *request
	all      []*request
	seq      []uint64 // next frame sequence number of each data socket
	err      atomic.Pointer[error]
	closed   atomic.Bool
	quit     chan struct{} // closed when the connection ends (failure or Close)
	quitOne  sync.Once
	wg       sync.WaitGroup
	cpus     topo.CPUSet // the helpers' CPUs (Options.CPUs)
	checksum bool        // Options.Checksum
}

func newConn(socks []gonet.Conn, o Options, what string) (*conn, error) {
	if len(socks) < 2 || len(socks) > MaxSockets {
		return nil, gccl.Errorf(gccl.InvalidArgument, "socks", "a connection needs a control socket and 1..%d data sockets, got %d sockets", MaxSockets-1, len(socks))
	}
	c := &conn{ctrl: socks[0], data: socks[1:], quit: make(chan struct{}), seq: make([]uint64, len(socks)-1), cpus: o.CPUs, checksum: o.Checksum}
	c.free, c.all = newRequests(InFlight, o.Timeout, what)
	threads := o.Threads
	if threads <= 0 || threads > len(c.data) {
		threads = len(c.data)
	}
	for range threads {
		c.queues = append(c.queues, &pieceQueue{wake: make(chan struct{}, 1)})
	}
	return c, nil
}

// pin puts the calling helper goroutine on the connection's CPUs until
// it calls unpin, at its end (defer c.pin()()); where that fails it runs
// where it is.
func (c *conn) pin() (unpin func()) {
	unpin, err := topo.Pin(c.cpus)
	if err != nil {
		env.Logger("NET").Debug("socket helper not placed", "cpus", c.cpus.String(), "err", err)
	}
	return unpin
}

// broken is the connection's sticky error, nil while it works.
func (c *conn) broken() error {
	if c.closed.Load() {
		return errClosed
	}
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// fail ends the connection with err (the first failure wins): every
// posted request finishes with it and blocked socket calls are interrupted.
func (c *conn) fail(err error) {
	if !c.err.CompareAndSwap(nil, &err) {
		return
	}
	for _, r := range c.all {
		r.finish(0, err)
	}
	c.stop()
	past := time.Unix(1, 0)
	_ = c.ctrl.SetDeadline(past)
	for _, s := range c.data {
		_ = s.SetDeadline(past)
	}
}

func (c *conn) stop() { c.quitOne.Do(func() { close(c.quit) }) }

// close closes the sockets, stops the goroutines and fails what is posted.
func (c *conn) close() {
	if c.closed.Swap(true) {
		return
	}
	c.stop()
	_ = c.ctrl.Close()
	for _, s := range c.data {
		_ = s.Close()
	}
	c.wg.Wait()
	for _, r := range c.all {
		r.finish(0, errClosed)
	}
}

// Abort ends the connection as Close does, but without the bye
// (network.Aborter): the peer sees the end as a failure, as it would a
// killed process's, never as network.ErrPeerClosed.
func (c *conn) Abort() error {
	c.close()
	return nil
}

// classify turns a socket error into a gccl error.
func (c *conn) classify(err error, what string) error {
	if berr := c.broken(); berr != nil {
		return berr
	}
	switch {
	case errors.Is(err, io.EOF):
		return gccl.Errorf(gccl.RemoteError, what, "the peer closed the connection")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return gccl.Errorf(gccl.RemoteError, what, "truncated frame: the peer closed the connection mid-frame")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return gccl.Errorf(gccl.TimeoutError, what, "socket deadline expired: %w", err)
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET), errors.Is(err, gonet.ErrClosed):
		return gccl.Errorf(gccl.RemoteError, what, "the peer closed the connection: %w", err)
	}
	return gccl.Errorf(gccl.RemoteError, what, "the connection to the peer failed: %w", err)
}

// begin checks a transfer of reg (inside m) and takes a request for it:
// nil and no error when InFlight are posted already.
func (c *conn) begin(reg network.Region, m network.MemHandle, tag uint32) (*request, error) {
	buf, err := bytesOf(reg, m)
	if err != nil {
		return nil, err
	}
	if err := c.broken(); err != nil {
		return nil, err
	}
	q := take(c.free)
	if q != nil {
		q.buf, q.tag = buf, tag
		if err := c.broken(); err != nil {
			// fail ran between the check above and take: it finished every
			// posted request, and q was not posted yet.
			q.finish(0, err)
		}
	}
	return q, nil
}

// piece is one piece of a transfer on data socket sock, with that
// socket's frame sequence number.
type piece struct {
	r    *request
	sock int
	seq  uint64
	buf  []byte
}

// pieceQueue is a helper goroutine's queue: unbounded, so posting a
// transfer never blocks, and reused, so it does not allocate once grown.
type pieceQueue struct {
	mu    sync.Mutex
	tasks []piece
	head  int
	wake  chan struct{}
}

func (q *pieceQueue) push(p piece) {
	q.mu.Lock()
	q.tasks = append(q.tasks, p)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop waits for the next piece; false when quit closes first.
func (q *pieceQueue) pop(quit <-chan struct{}) (piece, bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.tasks) {
			p := q.tasks[q.head]
			q.tasks[q.head] = piece{}
			q.head++
			if q.head == len(q.tasks) {
				q.tasks, q.head = q.tasks[:0], 0
			}
			q.mu.Unlock()
			return p, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-quit:
			return piece{}, false
		}
	}
}

// pieces cuts a transfer of n bytes (more than MaxInline) into pieces for
// nsocks data sockets: about n/nsocks each, within MinPiece..MaxPiece.
func pieceSize(n, nsocks int) int {
	return min(max(MinPiece, (n+nsocks-1)/nsocks), MaxPiece)
}

// memHandle is a registration: the socket provider needs none, so it only
// remembers the region, to check that transfers stay inside it.
type memHandle struct{ r network.Region }

func (m *memHandle) Region() network.Region { return m.r }

// Register accepts host memory (nothing to do for sockets); SendComm and
// RecvComm share it.
func (c *conn) Register(r network.Region) (network.MemHandle, error) {
	if r.Kind != network.MemHost {
		return nil, gccl.Errorf(gccl.InvalidArgument, "Region", "the socket provider registers host memory only, not kind %d", r.Kind)
	}
	if r.Len < 0 || r.Len > 0 && r.Ptr == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "Region", "region of %d bytes at %p is not valid", r.Len, r.Ptr)
	}
	return &memHandle{r}, nil
}

// Deregister releases a registration.
func (c *conn) Deregister(m network.MemHandle) error {
	if _, ok := m.(*memHandle); !ok || m == nil {
		return gccl.Errorf(gccl.InvalidArgument, "MemHandle", "not a registration of the socket provider")
	}
	return nil
}

// bytesOf returns r's bytes after checking that r lies inside m's region.
func bytesOf(r network.Region, m network.MemHandle) ([]byte, error) {
	mh, ok := m.(*memHandle)
	if !ok || mh == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "MemHandle", "not a registration of the socket provider")
	}
	if r.Len == 0 {
		return nil, nil
	}
	base, p := uintptr(mh.r.Ptr), uintptr(r.Ptr)
	if r.Kind != network.MemHost || r.Len < 0 || p < base || p+uintptr(r.Len) > base+uintptr(mh.r.Len) {
		return nil, gccl.Errorf(gccl.InvalidArgument, "Region", "region of %d bytes at %#x is not inside the registered %d bytes at %#x", r.Len, p, mh.r.Len, base)
	}
	return unsafe.Slice((*byte)(r.Ptr), r.Len), nil
}
