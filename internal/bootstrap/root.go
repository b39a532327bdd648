package bootstrap

import (
	"crypto/rand"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/wire"
)

// helloTimeout bounds how long an authenticated rank may take to present
// its hello (which may carry a slice's address list).
const helloTimeout = 30 * time.Second

// root is a process's rendezvous listener on one address, shared by every
// rendezvous registered there.
type root struct {
	ln   net.Listener
	addr netip.AddrPort

	mu      sync.Mutex
	entries map[wire.Key]*entry
}

// entry is one unique ID's state at its root.
type entry struct {
	secret wire.Secret
	subs   map[uint8]*rendezvous // in progress or failed
	used   map[uint8]bool        // completed: the ID cannot be used again
}

var (
	rootsMu sync.Mutex
	roots   = map[netip.Addr]*root{}
)

// NewRootID registers a new rendezvous at this process's root listener
// (starting it on first use) and returns the ID that ranks join it with.
func NewRootID() (wire.RootID, error) {
	ip, err := ListenIP()
	if err != nil {
		return wire.RootID{}, err
	}
	r, err := rootFor(ip)
	if err != nil {
		return wire.RootID{}, err
	}
	id := wire.RootID{Addr: r.addr}
	if _, err := rand.Read(id.Key[:]); err != nil {
		return wire.RootID{}, gccl.Errorf(gccl.SystemError, "random", "reading random bytes: %w", err)
	}
	_, _ = rand.Read(id.Secret[:]) // crypto/rand.Read does not fail once it has worked
	r.mu.Lock()
	r.entries[id.Key] = &entry{secret: id.Secret, subs: map[uint8]*rendezvous{}, used: map[uint8]bool{}}
	r.mu.Unlock()
	return id, nil
}

func rootFor(ip netip.Addr) (*root, error) {
	rootsMu.Lock()
	defer rootsMu.Unlock()
	if r, ok := roots[ip]; ok {
		return r, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "listen", "starting the root listener on %v: %w", ip, err)
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	r := &root{ln: ln, addr: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), entries: map[wire.Key]*entry{}}
	roots[ip] = r
	go serve(ln, "root "+r.addr.String(), nil, r.handle)
	r.log().Info("root listener started", "addr", r.addr)
	return r, nil
}

// handle authenticates one connection, reads its hello and hands the
// connection to its rendezvous. Rejections are written by their own
// goroutines so that a slow peer never holds the root's lock.
func (r *root) handle(c net.Conn, authed func()) {
	key, err := acceptAuth(c, r.lookup)
	authed()
	var h wire.Hello
	if err == nil {
		h, err = readHello(c)
	}
	if err != nil {
		if err == errWrongSecret {
			r.log().Error("rejected a connection presenting a wrong secret", "from", c.RemoteAddr())
		} else {
			r.log().Warn("rejected a bootstrap connection", "from", c.RemoteAddr(), "err", err)
		}
		reject(c, err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok { // cannot happen: entries are never removed
		go reject(c, r.unknown())
		return
	}
	if e.used[h.Sub] {
		go reject(c, gccl.Errorf(gccl.InvalidUsage, "uniqueId",
			"this unique ID already created a communicator; make a new ID with NewUniqueID for each communicator"))
		return
	}
	rv := e.subs[h.Sub]
	if rv == nil {
		rv = newRendezvous(r, e, h)
		e.subs[h.Sub] = rv
	}
	rv.join(c, h)
}

// lookup gives the secret of a rendezvous key this root issued.
func (r *root) lookup(k wire.Key) (wire.Secret, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[k]; ok {
		return e.secret, nil
	}
	return wire.Secret{}, r.unknown()
}

func (r *root) unknown() error {
	return gccl.Errorf(gccl.InvalidArgument, "uniqueId",
		"the root at %v never issued this unique ID (foreign ID, or the root process restarted); make a new one", r.addr)
}

// readHello reads an authenticated rank's hello.
func readHello(c net.Conn) (wire.Hello, error) {
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	defer c.SetReadDeadline(time.Time{})
	typ, p, err := wire.ReadFrame(c, wire.MaxPayload)
	if err != nil {
		return wire.Hello{}, err
	}
	if typ != wire.TypeHello {
		return wire.Hello{}, gccl.Errorf(gccl.InvalidArgument, "hello", "expected a hello, got %v", typ)
	}
	return wire.DecodeHello(p)
}

// log is looked up on each use, so the root (which lives as long as the
// process) follows env.Reload and env.SetOutput.
func (r *root) log() *slog.Logger { return env.Logger("BOOTSTRAP") }
