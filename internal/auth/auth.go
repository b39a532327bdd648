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
