package fdpass

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gccl/gccl"
)

// TokenLen is the size of the secret a peer presents to fetch a descriptor.
const TokenLen = 16

// MaxName bounds an abstract socket name (sun_path holds 108 bytes,
// the leading NUL that "@" stands for included).
const MaxName = 107

// Server serves one file descriptor on an abstract Unix socket to the
// peers that present its token, until want of them have fetched it, its
// context ends, or Close.
type Server struct {
	Name  string         // the socket's name, "@" for the abstract namespace
	Token [TokenLen]byte // what a peer must send first
	fd    int            // served, not owned
	ln    *net.UnixListener
	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	got   int // fetches served
	want  int // fetches after which the server closes
	done  bool
}

// Serve starts serving fd to up to want peers; ctx's deadline bounds
// every accept, read and write, and its end closes the server. The caller
// keeps fd open until Close returns.
func Serve(ctx context.Context, fd, want int) (*Server, error) {
	if fd < 0 || want < 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "fd", "cannot serve descriptor %d to %d peers", fd, want)
	}
	s := &Server{fd: fd, want: want}
	var nonce [8]byte
	if _, err := rand.Read(s.Token[:]); err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "token", "reading random bytes for a descriptor token: %w", err)
	}
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "token", "reading random bytes for a socket name: %w", err)
	}
	s.Name = fmt.Sprintf("@gccl-bufreg-%d-%s", os.Getpid(), hex.EncodeToString(nonce[:]))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: s.Name, Net: "unix"})
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "socket",
			"listening on abstract unix socket %s to share a cuMem descriptor: %w; the ranks stage instead if this persists, check that the host allows unix sockets", s.Name, err)
	}
	ln.SetUnlinkOnClose(false) // abstract: nothing to unlink
	s.ln = ln
	ctx, s.stop = context.WithCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		_ = ln.SetDeadline(d)
	}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); <-ctx.Done(); _ = ln.Close() }()
	go func() { defer s.wg.Done(); s.accept(ctx) }()
	if want == 0 {
		s.stop()
	}
	return s, nil
}

// accept serves connections until the listener closes.
func (s *Server) accept(ctx context.Context) {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			s.stop()
			return
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.serve(ctx, c) }()
	}
}

// serve hands the descriptor to c if c presents the token, and closes c.
func (s *Server) serve(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	stopWatch := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stopWatch()
	var tok [TokenLen]byte
	if _, err := io.ReadFull(c, tok[:]); err != nil || subtle.ConstantTimeCompare(tok[:], s.Token[:]) != 1 {
		return // wrong token or none: close without sending
	}
	s.mu.Lock()
	if s.done || s.got >= s.want {
		s.mu.Unlock()
		return // every expected peer has its descriptor
	}
	s.got++ // reserved before sending, so no more than want are served
	s.mu.Unlock()
	_, _, err := c.WriteMsgUnix([]byte{1}, syscall.UnixRights(s.fd), nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.got--
		return
	}
	if s.got >= s.want {
		s.done = true
		s.stop()
	}
}

// Expect sets how many peers will fetch the descriptor (once the exchange
// tells who needs it); the server closes when that many have.
func (s *Server) Expect(want int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.want = want
	if s.got >= s.want {
		s.done = true
		s.stop()
	}
}

// Fetches reports how many peers fetched the descriptor.
func (s *Server) Fetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got
}

// Close stops the server and waits until no connection uses the
// descriptor; it is safe on nil and twice.
func (s *Server) Close() {
	if s == nil {
		return
	}
	s.stop()
	s.wg.Wait()
}

// Fetch connects to the abstract socket name, presents token and returns
// the file descriptor the server sends, which the caller must close. ctx's
// deadline bounds the connection.
func Fetch(ctx context.Context, name string, token [TokenLen]byte) (int, error) {
	if len(name) < 2 || len(name) > MaxName || name[0] != '@' {
		return -1, gccl.Errorf(gccl.RemoteError, "socket", "%q is not an abstract unix socket name; are all ranks running the same gccl?", name)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", name)
	if err != nil {
		return -1, gccl.Errorf(gccl.RemoteError, "socket",
			"connecting to %s for a peer's cuMem descriptor: %w; the peer may have failed or timed out, or the ranks are in different network namespaces (run them in one, or register cudaMalloc memory)", name, err)
	}
	c := conn.(*net.UnixConn)
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stopWatch := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stopWatch()
	if _, err := c.Write(token[:]); err != nil {
		return -1, fetchErr(ctx, name, err)
	}
	buf, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil && oobn == 0 {
		return -1, fetchErr(ctx, name, err)
	}
	fds := receivedFDs(oob[:oobn])
	if n != 1 || buf[0] != 1 || len(fds) != 1 {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
		return -1, gccl.Errorf(gccl.RemoteError, "socket",
			"the peer at %s sent %d descriptors (%d bytes) instead of one: it refused the token or is not a gccl rank of this registration", name, len(fds), n)
	}
	return fds[0], nil
}

// receivedFDs returns the descriptors carried in a control message.
func receivedFDs(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func fetchErr(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return gccl.Errorf(gccl.TimeoutError, "socket", "fetching a peer's cuMem descriptor from %s: %v (%w); raise GCCL_TIMEOUT if the peers are slow", name, ctx.Err(), err)
	}
	return gccl.Errorf(gccl.RemoteError, "socket", "fetching a peer's cuMem descriptor from %s: %w", name, err)
}
