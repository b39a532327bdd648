package bootstrap

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder keeps every byte written through it.
type recorder struct {
	net.Conn
	sent bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.sent.Write(p)
	return r.Conn.Write(p)
}

// dialRoot opens a raw connection to the root of id and reads its challenge.
func dialRoot(t *testing.T, id wire.RootID) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", id.Addr.String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(authTimeout + 5*time.Second))
	return c
}

// TestReplayedHandshakeRejected captures a genuine dialer's handshake and
// replays it on a new connection: the root must refuse it, and the captured
// bytes must not contain the secret.
func TestReplayedHandshakeRejected(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	rec := &recorder{Conn: dialRoot(t, id)}
	require.NoError(t, dialAuth(rec, id.Key, id.Secret), "the genuine handshake passes")
	captured := rec.sent.Bytes()
	assert.False(t, bytes.Contains(captured, id.Secret[:]), "the secret crossed the wire")

	replay := dialRoot(t, id)
	_, _, err = wire.ReadFrame(replay, handshakeMax) // a fresh challenge, ignored
	require.NoError(t, err)
	_, err = replay.Write(captured)
	require.NoError(t, err)
	err = readStatus(replay)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument, "a replayed proof must be refused")
	assert.Contains(t, err.Error(), "wrong secret")
	_, err = replay.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the root closes a refused connection")

	// The ID still works for the genuine rank.
	n, err := Init(t.Context(), id, 1, 0, short)
	require.NoError(t, err)
	require.NoError(t, n.Close())
}

// TestImpostorListenerRejected: a listener that does not hold the secret
// cannot prove it, so a dialer gives up instead of sending its hello.
func TestImpostorListenerRejected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	key, secret := wire.Key{1}, wire.Secret{2}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// Not holding the secret, the impostor can only make a proof up.
		_ = wire.WriteFrame(c, wire.TypeChallenge, (&wire.Challenge{Nonce: auth.NewNonce()}).Encode())
		_, _, _ = wire.ReadFrame(c, wire.AuthMax)
		_ = wire.WriteFrame(c, wire.TypeProof, (&wire.Proof{MAC: auth.MAC{7}}).Encode())
		_, _ = c.Read(make([]byte, 1))
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	err = dialAuth(c, key, secret)
	require.ErrorIs(t, err, gccl.ErrRemote, "the dialer must refuse a listener that cannot prove the secret")
	assert.Contains(t, err.Error(), "could not prove")
}

// TestGarbageRejected sends hostile bytes to the root and to a rank's mesh
// listener: each connection must end within the handshake deadline, and
// both listeners keep working.
func TestGarbageRejected(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	nets := initAll(t, 2, func(r int) (*Net, error) { return Init(t.Context(), id, 2, r, short) })
	id2, err := NewRootID()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	huge := make([]byte, wire.HeaderSize)
	wire.EncodeHeader(huge, wire.Header{Type: wire.TypeAuth, Length: wire.MaxPayload})
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	cases := map[string][]byte{
		"random bytes":   random,
		"huge header":    huge,
		"a hello first":  wire.AppendFrame(nil, wire.TypeHello, (&wire.Hello{NRanks: 1}).Encode()),
		"truncated auth": wire.AppendFrame(nil, wire.TypeAuth, make([]byte, 10)),
		"nothing":        nil,
	}
	var wg sync.WaitGroup
	for _, addr := range []string{id2.Addr.String(), nets[0].ln.Addr().String()} {
		for name, b := range cases {
			wg.Go(func() { assertHungUp(t, addr, name, b) })
		}
	}
	wg.Wait()
	exercise(t, nets)
	n, err := Init(t.Context(), id2, 1, 0, short)
	require.NoError(t, err)
	require.NoError(t, n.Close())
}

// assertHungUp sends b to addr and checks that the listener closes the
// connection within the handshake deadline.
func assertHungUp(t *testing.T, addr, name string, b []byte) {
	c, err := net.Dial("tcp", addr)
	if !assert.NoError(t, err) {
		return
	}
	defer c.Close()
	start := time.Now()
	_, _ = c.Write(b)
	_ = c.SetReadDeadline(time.Now().Add(authTimeout + 3*time.Second))
	_, err = io.Copy(io.Discard, c) // until the listener hangs up
	if err != nil {
		assert.ErrorIs(t, err, syscall.ECONNRESET, "%s to %s: the listener must close the connection", name, addr)
	}
	assert.Less(t, time.Since(start), authTimeout+2*time.Second, name)
}
