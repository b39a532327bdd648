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

// Recv binds the connection on first use, waiting until the peer has
// connected its side, and receives the next message.
func (l *lazyRecv) Recv(ctx context.Context, accept func(Desc, int) error, consume func(piece []byte) error) error {
	c, err := l.bind(ctx)
	if err != nil {
		return err
	}
	return c.Recv(ctx, accept, consume)
}

// Bind binds the connection (waiting until the peer has connected its side)
// without receiving.
func (l *lazyRecv) Bind(ctx context.Context) error {
	_, err := l.bind(ctx)
	return err
}

// Send is not supported on a receiving direction.
func (l *lazyRecv) Send(context.Context, Desc, []byte) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Send on the receiving direction of a connection")
}

// Fail fails the bound Conn; unbound, there is no peer to tell.
func (l *lazyRecv) Fail(err error) {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c != nil {
		c.Fail(err)
	}
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
