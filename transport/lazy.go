package transport

import (
	"context"
	"sync"

	"github.com/gccl/gccl"
)

// lazyRecv is the receiving direction of a connection, bound to the peer's
// resources (its ring file, its dialled sockets) on first use. Connect so
// never waits for the peer's own Connect call, which is what lets every rank
// connect to every other in any order without deadlock.
type lazyRecv struct {
	mu      sync.Mutex
	open    func(ctx context.Context) (Conn, error)
	abandon func() // tells the peer, if it connected, that nobody will read
	c       Conn
	err     error // a failed bind is final
	done    context.Context
	cancel  context.CancelFunc
}

func newLazyRecv(open func(ctx context.Context) (Conn, error), abandon func()) *lazyRecv {
	done, cancel := context.WithCancel(context.Background())
	return &lazyRecv{open: open, abandon: abandon, done: done, cancel: cancel}
}

var errConnClosed = gccl.Errorf(gccl.InvalidUsage, "conn", "use of a closed connection")

// bind returns the bound Conn, waiting (within ctx) for the peer if needed.
func (l *lazyRecv) bind(ctx context.Context) (Conn, error) {
	if l.done.Err() != nil {
		return nil, errConnClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil || l.err != nil {
		return l.c, l.err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(l.done, cancel)
	defer stop()
	c, err := l.open(ctx)
	if l.done.Err() != nil {
		if c != nil {
			c.Close()
		}
		return nil, errConnClosed
	}
	if err != nil {
		if gccl.Code(err) != gccl.TimeoutError {
			l.err = err
		}
		return nil, err
	}
	l.c = c
	return c, nil
}

// Recv binds the connection on first use (so Recv(ctx, 0, nil) waits until
// the peer has connected its side) and receives n bytes.
func (l *lazyRecv) Recv(ctx context.Context, n int, consume func(piece []byte) error) error {
	c, err := l.bind(ctx)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return c.Recv(ctx, n, consume)
}

// Send is not supported on a receiving direction.
func (l *lazyRecv) Send(context.Context, []byte) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Send on the receiving direction of a connection")
}

// Close interrupts a bind in progress and closes the bound Conn; if it was
// never bound, the peer's side (when there) is told that nobody will read, so
// the peer's Send fails with gccl.ErrRemote instead of waiting. Safe twice.
func (l *lazyRecv) Close() error {
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == errConnClosed {
		return nil
	}
	c := l.c
	l.c, l.err = nil, errConnClosed
	if c != nil {
		return c.Close()
	}
	l.abandon()
	return nil
}
