package wire

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"strconv"

	"github.com/gccl/gccl"
)

// Limits on what the wire may carry.
const (
	HeaderSize = 16
	MaxPayload = 16 << 20   // bytes in one frame's payload
	MaxRanks   = 1 << 20    // entries in one address list
	Magic      = 0x6763636c // "gccl"
	Version    = 2          // 2: challenge-response; the secret no longer crosses the wire
)

// Type is the type of a bootstrap message.
type Type uint8

// The message types.
const (
	TypeHello     Type = iota + 1 // rank → root: join a rendezvous
	TypeStatus                    // a result: ok or an error
	TypePeers                     // root → rank: every rank's address
	TypeForward                   // slice leader → root: the full list to relay
	TypePeerHello                 // rank → rank: open a mesh connection
	TypeData                      // rank → rank: a tagged message
	TypeChallenge                 // listener → dialer: a fresh nonce
	TypeAuth                      // dialer → listener: key, nonce and proof of the secret
	TypeProof                     // listener → dialer: the listener's proof of the secret
	numTypes
)

var typeNames = [...]string{"", "hello", "status", "peers", "forward", "peer-hello", "data", "challenge", "auth", "proof"}

func (t Type) String() string {
	if t > 0 && t < numTypes {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Header is a frame's header.
type Header struct {
	Type   Type
	Length uint32
	CRC    uint32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// EncodeHeader writes h into b[:HeaderSize].
func EncodeHeader(b []byte, h Header) {
	binary.LittleEndian.PutUint32(b[0:], Magic)
	b[4] = Version
	b[5] = byte(h.Type)
	b[6], b[7] = 0, 0
	binary.LittleEndian.PutUint32(b[8:], h.Length)
	binary.LittleEndian.PutUint32(b[12:], h.CRC)
}

// DecodeHeader parses a header, checking magic, version, type and that the
// length is at most max.
func DecodeHeader(b []byte, max int) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, corrupt("header", "%d bytes, want %d", len(b), HeaderSize)
	}
	if m := binary.LittleEndian.Uint32(b); m != Magic {
		return Header{}, corrupt("header", "bad magic %#x: the peer is not a gccl bootstrap", m)
	}
	if b[4] != Version {
		return Header{}, corrupt("header", "format version %d, want %d: mixed gccl versions", b[4], Version)
	}
	h := Header{Type: Type(b[5]), Length: binary.LittleEndian.Uint32(b[8:]), CRC: binary.LittleEndian.Uint32(b[12:])}
	if h.Type == 0 || h.Type >= numTypes || b[6] != 0 || b[7] != 0 {
		return Header{}, corrupt("header", "unknown message type %d", b[5])
	}
	if max > MaxPayload {
		max = MaxPayload
	}
	if int64(h.Length) > int64(max) {
		return Header{}, corrupt("header", "%v payload of %d bytes exceeds the limit of %d", h.Type, h.Length, max)
	}
	return h, nil
}

// AppendFrame appends a frame holding payload to b.
func AppendFrame(b []byte, t Type, payload []byte) []byte {
	var h [HeaderSize]byte
	EncodeHeader(h[:], Header{Type: t, Length: uint32(len(payload)), CRC: Checksum(payload)})
	return append(append(b, h[:]...), payload...)
}

// WriteFrame writes one frame: in one writev on a net.Conn (so frames of
// concurrent writers never interleave), without copying the payload.
func WriteFrame(w io.Writer, t Type, payload []byte) error {
	return writeFrame(w, t, payload)
}

// writeFrame writes a frame whose payload is the concatenation of parts.
func writeFrame(w io.Writer, t Type, parts ...[]byte) error {
	size, crc := 0, uint32(0)
	for _, p := range parts {
		size += len(p)
		crc = crc32.Update(crc, castagnoli, p)
	}
	if size > MaxPayload {
		return gccl.Errorf(gccl.InvalidArgument, "message", "%d bytes exceed the bootstrap limit of %d; send less", size, MaxPayload)
	}
	var h [HeaderSize]byte
	EncodeHeader(h[:], Header{Type: t, Length: uint32(size), CRC: crc})
	bufs := append(net.Buffers{h[:]}, parts...)
	_, err := bufs.WriteTo(w)
	return err
}

// ReadFrame reads one frame whose payload is at most max bytes. I/O errors
// are returned as they are (io.EOF, timeouts) so callers can tell a closed
// peer from a corrupt one; malformed frames give a RemoteError.
func ReadFrame(r io.Reader, max int) (Type, []byte, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return 0, nil, err
	}
	h, err := DecodeHeader(hb[:], max)
	if err != nil {
		return 0, nil, err
	}
	p := make([]byte, h.Length)
	if _, err := io.ReadFull(r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	if c := Checksum(p); c != h.CRC {
		return 0, nil, corrupt("frame", "%v payload checksum %#x, header says %#x", h.Type, c, h.CRC)
	}
	return h.Type, p, nil
}

func corrupt(what, format string, a ...any) error {
	return gccl.Errorf(gccl.RemoteError, what, "corrupt bootstrap "+what+": "+format, a...)
}

func corruptArg(arg, format string, a ...any) error {
	return gccl.Errorf(gccl.InvalidArgument, arg, format, a...)
}
