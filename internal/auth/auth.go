package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
)

// Sizes on the wire.
const (
	NonceSize = 32
	MACSize   = sha256.Size
)

// Nonce is a fresh random challenge; MAC a proof.
type (
	Nonce [NonceSize]byte
	MAC   [MACSize]byte
)

// Role says which end computes a proof; each end's proof differs, so a
// listener's proof can never be reflected back as a dialer's.
type Role uint8

// The two ends of a handshake.
const (
	Dialer Role = iota
	Listener
)

var labels = [...]string{Dialer: "gccl dialer v1", Listener: "gccl listener v1"}

// NewNonce returns a fresh random nonce.
func NewNonce() Nonce {
	var n Nonce
	_, _ = rand.Read(n[:]) // crypto/rand.Read never fails on Linux (it panics on a broken kernel)
	return n
}

// Prove returns role's proof of secret for the exchange (listener, dialer
// nonces) about context.
func Prove(secret []byte, role Role, context []byte, listener, dialer Nonce) MAC {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(labels[role]))
	m.Write(context)
	m.Write(listener[:])
	m.Write(dialer[:])
	var out MAC
	m.Sum(out[:0])
	return out
}

// Check reports, in constant time, whether got is role's proof of secret.
func Check(got MAC, secret []byte, role Role, context []byte, listener, dialer Nonce) bool {
	want := Prove(secret, role, context, listener, dialer)
	return hmac.Equal(got[:], want[:])
}

// Derive returns a 128-bit key for purpose, derived from secret and info:
// HMAC-SHA256(secret, "gccl derive v1" ‖ purpose ‖ 0 ‖ info), truncated.
// Anyone who holds secret gets the same key without a message; anyone who
// does not cannot predict it. Keys for different purposes are unrelated,
// and none is ever a handshake's proof (those start with another label), so
// a key derived for one protocol is no use against another.
func Derive(secret []byte, purpose string, info []byte) [16]byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("gccl derive v1"))
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(info)
	var sum MAC
	m.Sum(sum[:0])
	return [16]byte(sum[:16])
}
