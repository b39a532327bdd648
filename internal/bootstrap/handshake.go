package bootstrap

import (
	"log/slog"
	"net"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/accept"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/wire"
)

// Bounds on peers that have not proven they hold the secret: how many may be
// in their handshake at once (per listener; more wait in the kernel's
// backlog), and how long each may take. An unauthenticated connection costs
// a goroutine, a socket and reads of at most wire.AuthMax bytes.
const (
	maxUnauthenticated = 256
	authTimeout        = 5 * time.Second
)

// serve runs ln's accept loop with the bootstrap's bounds (see package accept).
func serve(ln net.Listener, name string, spawn func(func()), handle accept.Handler) {
	accept.Serve(ln, accept.Config{MaxPending: maxUnauthenticated, Go: spawn, Log: func() *slog.Logger { return env.Logger("BOOTSTRAP") }, Name: name}, handle)
}

// lookupFunc gives the secret of a rendezvous key, or the error to answer a
// key the listener does not know.
type lookupFunc func(wire.Key) (wire.Secret, error)

// acceptAuth runs the listener's side of the handshake on c within
// authTimeout: it challenges, checks the dialer's proof of the secret that
// lookup gives for the presented key, and proves itself. It returns the
// key; on error the caller rejects c.
func acceptAuth(c net.Conn, lookup lookupFunc) (wire.Key, error) {
	_ = c.SetDeadline(time.Now().Add(authTimeout))
	defer c.SetDeadline(time.Time{})
	ch := wire.Challenge{Nonce: auth.NewNonce()}
	if err := wire.WriteFrame(c, wire.TypeChallenge, ch.Encode()); err != nil {
		return wire.Key{}, err
	}
	typ, p, err := wire.ReadFrame(c, wire.AuthMax)
	if err == nil && typ != wire.TypeAuth {
		err = gccl.Errorf(gccl.InvalidArgument, "hello", "expected an auth message, got %v", typ)
	}
	var a wire.Auth
	if err == nil {
		a, err = wire.DecodeAuth(p)
	}
	if err != nil {
		return wire.Key{}, err
	}
	secret, err := lookup(a.Key)
	if err != nil {
		return a.Key, err
	}
	if !auth.Check(a.MAC, secret[:], auth.Dialer, a.Key[:], ch.Nonce, a.Nonce) {
		return a.Key, errWrongSecret
	}
	pr := wire.Proof{MAC: auth.Prove(secret[:], auth.Listener, a.Key[:], ch.Nonce, a.Nonce)}
	return a.Key, wire.WriteFrame(c, wire.TypeProof, pr.Encode())
}

// errWrongSecret answers a dialer whose proof did not match.
var errWrongSecret = gccl.Errorf(gccl.InvalidArgument, "uniqueId",
	"wrong secret: the unique ID was altered or belongs to another job")

// dialAuth runs the dialer's side of the handshake on c (whose deadline
// the caller set): it answers the challenge with a proof of id's secret
// and checks the listener's proof.
func dialAuth(c net.Conn, key wire.Key, secret wire.Secret) error {
	typ, p, err := wire.ReadFrame(c, handshakeMax)
	if err != nil {
		return err
	}
	if typ == wire.TypeStatus {
		return statusErr(p)
	}
	if typ != wire.TypeChallenge {
		return gccl.Errorf(gccl.RemoteError, "bootstrap", "expected a challenge, got %v", typ)
	}
	ch, err := wire.DecodeChallenge(p)
	if err != nil {
		return err
	}
	a := wire.Auth{Key: key, Nonce: auth.NewNonce()}
	a.MAC = auth.Prove(secret[:], auth.Dialer, key[:], ch.Nonce, a.Nonce)
	if err := wire.WriteFrame(c, wire.TypeAuth, a.Encode()); err != nil {
		return err
	}
	typ, p, err = wire.ReadFrame(c, handshakeMax)
	switch {
	case err != nil:
		return err
	case typ == wire.TypeStatus:
		return statusErr(p)
	case typ != wire.TypeProof:
		return gccl.Errorf(gccl.RemoteError, "bootstrap", "expected a proof, got %v", typ)
	}
	pr, err := wire.DecodeProof(p)
	if err == nil && !auth.Check(pr.MAC, secret[:], auth.Listener, key[:], ch.Nonce, a.Nonce) {
		err = gccl.Errorf(gccl.RemoteError, "uniqueId",
			"the listener at %v could not prove it holds the unique ID's secret (another process on that address?)", c.RemoteAddr())
	}
	return err
}

// statusErr decodes a Status payload into its error; a success status
// where a handshake message was due is an error too.
func statusErr(p []byte) error {
	s, err := wire.DecodeStatus(p)
	if err != nil {
		return err
	}
	if err := s.Err(); err != nil {
		return err
	}
	return gccl.Errorf(gccl.RemoteError, "bootstrap", "the listener answered success before the handshake ended")
}
