package net

import (
	"crypto/subtle"
	"encoding/binary"
	"hash/crc32"

	"github.com/gccl/gccl"
)

// Identity is what a socket must present to be accepted: the communicator's
// id and the secret of the unique ID it was made from.
type Identity struct {
	CommID [16]byte
	Secret [16]byte
}

// Bounds of a hello.
const (
	helloMagic   = 0x31484347 // "GCH1"
	helloVersion = 1
	helloSize    = 4 + 2 + 16 + 16 + 4 + 4 + 2 + 2 + 4

	MaxRank    = 1 << 24 // largest rank a hello may carry
	MaxChannel = 1 << 16 // largest channel a hello may carry
	MaxSockets = 64      // most sockets per connection

	ackOK       = 'K'
	ackRejected = 'R'
)

// hello opens every socket: who dials, for which channel, which socket of
// how many, and the identity it presents.
type hello struct {
	id      Identity
	rank    int
	channel int
	index   int
	count   int
}

func (h hello) marshal() []byte {
	b := make([]byte, helloSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], helloMagic)
	le.PutUint16(b[4:], helloVersion)
	copy(b[6:22], h.id.CommID[:])
	copy(b[22:38], h.id.Secret[:])
	le.PutUint32(b[38:], uint32(h.rank))
	le.PutUint32(b[42:], uint32(h.channel))
	le.PutUint16(b[46:], uint16(h.index))
	le.PutUint16(b[48:], uint16(h.count))
	le.PutUint32(b[50:], crc32.Checksum(b[:50], castagnoli))
	return b
}

// parseHello decodes and bounds-checks a hello; it does not check identity.
func parseHello(b []byte) (hello, error) {
	le := binary.LittleEndian
	if len(b) != helloSize || le.Uint32(b[0:]) != helloMagic {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "not a gccl transport hello")
	}
	if v := le.Uint16(b[4:]); v != helloVersion {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "hello version %d, want %d: mixed gccl versions", v, helloVersion)
	}
	if le.Uint32(b[50:]) != crc32.Checksum(b[:50], castagnoli) {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "hello checksum mismatch")
	}
	h := hello{rank: int(le.Uint32(b[38:])), channel: int(le.Uint32(b[42:])),
		index: int(le.Uint16(b[46:])), count: int(le.Uint16(b[48:]))}
	copy(h.id.CommID[:], b[6:22])
	copy(h.id.Secret[:], b[22:38])
	if h.rank >= MaxRank || h.channel >= MaxChannel || h.count < 1 || h.count > MaxSockets || h.index >= h.count {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "hello out of range: rank %d channel %d socket %d of %d", h.rank, h.channel, h.index, h.count)
	}
	return h, nil
}

// matches compares identities in constant time.
func (id Identity) matches(o Identity) bool {
	return subtle.ConstantTimeCompare(id.CommID[:], o.CommID[:])&subtle.ConstantTimeCompare(id.Secret[:], o.Secret[:]) == 1
}
