package net

import (
	"bytes"
	"io"
	gonet "net"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handshakeRaw reads l's challenge on a new socket and sends the hello
// build returns; it returns the first byte of the answer (0 if none).
func handshakeRaw(t *testing.T, l *Listener, build func(challenge auth.Nonce) []byte) byte {
	t.Helper()
	c, err := gonet.Dial("tcp", l.Addr())
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var challenge auth.Nonce
	_, err = io.ReadFull(c, challenge[:])
	require.NoError(t, err)
	_, err = c.Write(build(challenge))
	require.NoError(t, err)
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		return 0
	}
	return b[0]
}

// TestHelloReplayAndWrongSecretRejected: a captured hello is refused on a
// new socket (its proof was for another challenge), so is a hello signed
// with another secret or for another communicator, and the secret is not
// in any hello's bytes.
func TestHelloReplayAndWrongSecretRejected(t *testing.T) {
	id := Identity{CommID: [16]byte{1, 2}, Secret: [16]byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}}
	l, err := Listen(gonet.IPv4(127, 0, 0, 1), id, 0, 5*time.Second)
	require.NoError(t, err)
	defer l.Close()
	var captured []byte
	signed := func(with Identity) func(auth.Nonce) []byte {
		return func(challenge auth.Nonce) []byte {
			h := hello{rank: 1, channel: 0, index: 0, count: 1}
			h.sign(with, challenge)
			captured = h.marshal()
			return captured
		}
	}
	assert.Equal(t, byte(ackOK), handshakeRaw(t, l, signed(id)), "the genuine hello")
	assert.False(t, bytes.Contains(captured, id.Secret[:]), "the secret crossed the wire")
	replay := captured
	assert.Equal(t, byte(ackRejected), handshakeRaw(t, l, func(auth.Nonce) []byte { return replay }), "a replayed hello")
	wrong := id
	wrong.Secret[0] ^= 1
	assert.Equal(t, byte(ackRejected), handshakeRaw(t, l, signed(wrong)), "a wrong secret")
	other := id
	other.CommID[0] ^= 1
	assert.Equal(t, byte(ackRejected), handshakeRaw(t, l, signed(other)), "another communicator")
	garbage := bytes.Repeat([]byte{0xA5}, helloSize)
	assert.Equal(t, byte(ackRejected), handshakeRaw(t, l, func(auth.Nonce) []byte { return garbage }), "garbage")
}

// TestDialerRefusesImpostor: a listener that cannot prove the secret (it
// acknowledges anything) makes Dial fail instead of sending data to it.
func TestDialerRefusesImpostor(t *testing.T) {
	impostor, err := gonet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer impostor.Close()
	go func() {
		c, err := impostor.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(make([]byte, challengeSize))
		_, _ = io.ReadFull(c, make([]byte, helloSize))
		_, _ = c.Write(append([]byte{ackOK}, make([]byte, auth.MACSize)...))
		_, _ = c.Read(make([]byte, 1))
	}()
	d := Dialer{ID: Identity{CommID: [16]byte{3}, Secret: [16]byte{4}}, Timeout: 2 * time.Second}
	_, err = d.Dial(t.Context(), impostor.Addr().String(), 0, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "could not prove")
}
