package wire

import "github.com/gccl/gccl/internal/auth"

// The handshake that opens every bootstrap connection (root and mesh), before
// any other message: the listener sends a Challenge, the dialer an Auth, the
// listener a Proof (or a Status saying why it refuses). Each is small and of
// fixed size, so a listener reads at most AuthMax bytes from a peer that has
// not proven it holds the secret.

// AuthMax bounds the payload of a handshake message.
const AuthMax = 16 + auth.NonceSize + auth.MACSize

// Challenge is the listener's fresh nonce.
type Challenge struct {
	Nonce auth.Nonce
}

// Encode returns the payload of c.
func (c *Challenge) Encode() []byte { return append([]byte(nil), c.Nonce[:]...) }

// DecodeChallenge parses a Challenge payload.
func DecodeChallenge(b []byte) (Challenge, error) {
	d := newDec("challenge", b)
	var c Challenge
	copy(c.Nonce[:], d.take(auth.NonceSize))
	return c, d.done()
}

// Auth is the dialer's answer: which rendezvous it wants (Key), its own
// nonce, and its proof of the secret over both nonces and the key.
type Auth struct {
	Key   Key
	Nonce auth.Nonce
	MAC   auth.MAC
}

// Encode returns the payload of a.
func (a *Auth) Encode() []byte {
	e := &enc{}
	e.raw(a.Key[:])
	e.raw(a.Nonce[:])
	e.raw(a.MAC[:])
	return e.b
}

// DecodeAuth parses an Auth payload.
func DecodeAuth(b []byte) (Auth, error) {
	d := newDec("auth", b)
	a := Auth{Key: d.key()}
	copy(a.Nonce[:], d.take(auth.NonceSize))
	copy(a.MAC[:], d.take(auth.MACSize))
	return a, d.done()
}

// Proof is the listener's proof of the secret.
type Proof struct {
	MAC auth.MAC
}

// Encode returns the payload of p.
func (p *Proof) Encode() []byte { return append([]byte(nil), p.MAC[:]...) }

// DecodeProof parses a Proof payload.
func DecodeProof(b []byte) (Proof, error) {
	d := newDec("proof", b)
	var p Proof
	copy(p.MAC[:], d.take(auth.MACSize))
	return p, d.done()
}
