package bootstrap

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

// handshakeMax bounds what an unauthenticated peer can make us read: a
// PeerHello or Status is tiny.
const handshakeMax = 1 << 12

// withDeadline returns ctx with the default timeout applied when ctx has no
// deadline of its own.
func withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// watch applies ctx's deadline to c's I/O and interrupts it when ctx is
// cancelled. Call the returned function when the I/O is over.
func watch(ctx context.Context, c net.Conn) func() {
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// ctxErr explains why ctx is done.
func ctxErr(ctx context.Context, arg, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return gccl.Errorf(gccl.TimeoutError, arg, "%s: deadline expired (raise Config.Timeout or GCCL_TIMEOUT if the ranks are only slow)", what)
	}
	return gccl.Errorf(gccl.InvalidUsage, arg, "%s: %w", what, ctx.Err())
}

// ioErr classifies a socket error: a done ctx or an I/O timeout is
// TimeoutError, a *gccl.Error stays as it is, anything else (EOF, reset,
// refused) means the other side is gone: RemoteError.
func ioErr(ctx context.Context, err error, arg, what string) error {
	if ctx != nil && ctx.Err() != nil {
		return ctxErr(ctx, arg, what)
	}
	var ge *gccl.Error
	if errors.As(err, &ge) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return gccl.Errorf(gccl.TimeoutError, arg, "%s: deadline expired: %w", what, err)
	}
	return gccl.Errorf(gccl.RemoteError, arg, "%s: %w (the other side exited, aborted or crashed)", what, err)
}

// readStatus reads a Status frame and returns its error (nil for success).
func readStatus(c net.Conn) error {
	typ, p, err := wire.ReadFrame(c, handshakeMax)
	if err != nil {
		return err
	}
	if typ != wire.TypeStatus {
		return gccl.Errorf(gccl.RemoteError, "bootstrap", "expected a status message, got %v", typ)
	}
	s, err := wire.DecodeStatus(p)
	if err != nil {
		return err
	}
	return s.Err()
}

// writeStatus sends err (nil for success) as a Status frame.
func writeStatus(c net.Conn, err error) error {
	s := wire.StatusOf(err)
	return wire.WriteFrame(c, wire.TypeStatus, s.Encode())
}

// reject tells c why it is refused (best effort, briefly) and closes it.
func reject(c net.Conn, err error) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_ = writeStatus(c, err)
	_ = c.Close()
}

// listen opens a TCP listener on the chosen interface, on a free port.
func listen() (net.Listener, error) {
	ip, err := ListenIP()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "listen", "listening on %v: %w", ip, err)
	}
	return ln, nil
}
