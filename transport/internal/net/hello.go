package net

import (
	"crypto/subtle"
	"encoding/binary"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/auth"
)

// Identity is what a socket must prove to be accepted: the communicator's
// id and the secret of the unique ID it was made from. The secret never
// crosses the wire: the listener sends a fresh nonce (the challenge), the
// dialer's hello carries its proof (package internal/auth), and the
// listener's acknowledgement carries the listener's proof.
type Identity struct {
	CommID [16]byte
	Secret [16]byte
}

// Bounds of a hello.
const (
	helloMagic     = 0x32484347 // "GCH2"
	helloVersion   = 2
	challengeSize  = auth.NonceSize
	helloFields    = 4 + 2 + 16 + auth.NonceSize + 4 + 4 + 2 + 2 // what the proof covers
	helloSize      = helloFields + auth.MACSize
	ackSize        = 1 + auth.MACSize
	MaxRank        = 1 << 24 // largest rank a hello may carry
	MaxChannel     = 1 << 16 // largest channel a hello may carry
	MaxSockets     = 64      // most sockets per connection
	ackOK          = 'K'
	ackRejected    = 'R'
	offHelloNonce  = 22
	offHelloFields = offHelloNonce + auth.NonceSize
)

// hello opens every socket: who dials, for which channel, which socket of
// how many, for which communicator, and the dialer's nonce and proof.
type hello struct {
	comm    [16]byte
	nonce   auth.Nonce
	rank    int
	channel int
	index   int
	count   int
	mac     auth.MAC
}

// marshal encodes h with the mac it carries.
func (h hello) marshal() []byte {
	b := make([]byte, helloSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], helloMagic)
	le.PutUint16(b[4:], helloVersion)
	copy(b[6:22], h.comm[:])
	copy(b[offHelloNonce:], h.nonce[:])
	o := offHelloFields
	le.PutUint32(b[o:], uint32(h.rank))
	le.PutUint32(b[o+4:], uint32(h.channel))
	le.PutUint16(b[o+8:], uint16(h.index))
	le.PutUint16(b[o+10:], uint16(h.count))
	copy(b[helloFields:], h.mac[:])
	return b
}

// sign sets h's nonce and proof of id's secret for the listener's challenge.
func (h *hello) sign(id Identity, challenge auth.Nonce) {
	h.comm, h.nonce = id.CommID, auth.NewNonce()
	h.mac = auth.Prove(id.Secret[:], auth.Dialer, h.marshal()[:helloFields], challenge, h.nonce)
}

// verify reports whether h proves id for challenge (in constant time).
func (h hello) verify(id Identity, challenge auth.Nonce) bool {
	sameComm := subtle.ConstantTimeCompare(h.comm[:], id.CommID[:]) == 1
	return auth.Check(h.mac, id.Secret[:], auth.Dialer, h.marshal()[:helloFields], challenge, h.nonce) && sameComm
}

// parseHello decodes and bounds-checks a hello; it does not check the proof.
func parseHello(b []byte) (hello, error) {
	le := binary.LittleEndian
	if len(b) != helloSize || le.Uint32(b[0:]) != helloMagic {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "not a gccl transport hello")
	}
	if v := le.Uint16(b[4:]); v != helloVersion {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "hello version %d, want %d: mixed gccl versions", v, helloVersion)
	}
	o := offHelloFields
	h := hello{rank: int(le.Uint32(b[o:])), channel: int(le.Uint32(b[o+4:])),
		index: int(le.Uint16(b[o+8:])), count: int(le.Uint16(b[o+10:]))}
	copy(h.comm[:], b[6:22])
	copy(h.nonce[:], b[offHelloNonce:])
	copy(h.mac[:], b[helloFields:])
	if h.rank >= MaxRank || h.channel >= MaxChannel || h.count < 1 || h.count > MaxSockets || h.index >= h.count {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "hello out of range: rank %d channel %d socket %d of %d", h.rank, h.channel, h.index, h.count)
	}
	return h, nil
}

// ack is the listener's acceptance: ackOK and its own proof over the
// dialer's hello.
func ack(id Identity, h hello, challenge auth.Nonce) []byte {
	mac := auth.Prove(id.Secret[:], auth.Listener, h.marshal()[:helloFields], challenge, h.nonce)
	return append([]byte{ackOK}, mac[:]...)
}

// checkAck reports whether b is the listener's acceptance of h.
func checkAck(b []byte, id Identity, h hello, challenge auth.Nonce) bool {
	var mac auth.MAC
	copy(mac[:], b[1:])
	return len(b) == ackSize && b[0] == ackOK &&
		auth.Check(mac, id.Secret[:], auth.Listener, h.marshal()[:helloFields], challenge, h.nonce)
}
