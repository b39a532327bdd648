package net

import (
	"encoding/binary"
	"hash/crc32"
	gonet "net"
	"time"

	"github.com/gccl/gccl"
)

// Frame header layout (little-endian): magic, flags, the socket's frame
// sequence number, payload length, payload CRC32C (with flagCRC, else 0);
// on a transfer's header (flagXfer) the transfer's length, tag and piece
// size; on a failure record (flagFail) the error's code; the CRC32C of the
// header, which is always there: a corrupted or desynchronised stream is
// an error, never a hang or data.
const (
	frameMagic  = 0x34464347 // "GCF4" little-endian: flagCRC since GCF4
	HeaderSize  = 48
	hdrCRCStart = 44 // bytes [0,44) are covered by the header CRC at [44,48)

	flagXfer  = 1 // control socket: a transfer's header (and, inline, its bytes)
	flagPiece = 2 // data socket: one piece of a transfer
	flagFail  = 4 // a failure record: the payload is the error's message
	flagBye   = 8 // control socket: an orderly Close, no payload; the last frame
	// flagCRC, beside one of the kinds above, says that the header holds
	// the CRC32C of the payload (Options.Checksum on the sender, always on
	// a failure record), which the receiver then verifies.
	flagCRC = 16

	// MaxInline is the largest transfer sent inline on the control socket:
	// header and bytes in one write from Isend itself, no hand-off.
	MaxInline = 128 << 10
	// MinPiece and MaxPiece bound the pieces a larger transfer is cut into,
	// one per data socket in turn.
	MinPiece = 64 << 10
	MaxPiece = 4 << 20
	// maxFailMsg bounds a failure record's message.
	maxFailMsg = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is one frame's header, decoded.
type header struct {
	flags  uint32 // the frame's kind: flagXfer, flagPiece, flagFail or flagBye
	sum    bool   // flagCRC: crc is the payload's CRC32C
	seq    uint64
	length int    // payload bytes after the header
	crc    uint32 // CRC32C of the payload with sum, else 0
	total  uint64 // flagXfer: the transfer's length
	tag    uint32 // flagXfer: the transfer's tag
	piece  int    // flagXfer: bytes per piece on the data sockets, 0 when inline
	code   uint32 // flagFail: the error's code
}

// put writes h into b[:HeaderSize].
func (h header) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], frameMagic)
	flags := h.flags
	if h.sum {
		flags |= flagCRC
	}
	le.PutUint32(b[4:], flags)
	le.PutUint64(b[8:], h.seq)
	le.PutUint32(b[16:], uint32(h.length))
	le.PutUint32(b[20:], h.crc)
	le.PutUint64(b[24:], h.total)
	le.PutUint32(b[32:], h.tag)
	le.PutUint32(b[36:], uint32(h.piece))
	le.PutUint32(b[40:], h.code)
	le.PutUint32(b[hdrCRCStart:], crc32.Checksum(b[:hdrCRCStart], castagnoli))
}

// setPayload sets h's payload length to p's and, with sum, its CRC32C
// (flagCRC).
func (h *header) setPayload(p []byte, sum bool) {
	h.length, h.sum = len(p), sum
	if sum {
		h.crc = crc32c(p)
	}
}

// parseHeader decodes and validates a frame header: magic, header
// checksum, one known kind (flagCRC aside; without it a zero payload
// CRC), lengths in range for it, and the expected sequence number.
func parseHeader(b []byte, wantSeq uint64) (header, error) {
	le := binary.LittleEndian
	if len(b) < HeaderSize {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "header is %d bytes, want %d", len(b), HeaderSize)
	}
	if m := le.Uint32(b[0:]); m != frameMagic {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "bad magic %#x: the stream is corrupted or not a gccl peer of this version", m)
	}
	if got, want := le.Uint32(b[hdrCRCStart:]), crc32.Checksum(b[:hdrCRCStart], castagnoli); got != want {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "header checksum mismatch (%#x, want %#x): the stream is corrupted", got, want)
	}
	flags := le.Uint32(b[4:])
	h := header{
		flags:  flags &^ flagCRC,
		sum:    flags&flagCRC != 0,
		seq:    le.Uint64(b[8:]),
		length: int(le.Uint32(b[16:])),
		crc:    le.Uint32(b[20:]),
		total:  le.Uint64(b[24:]),
		tag:    le.Uint32(b[32:]),
		piece:  int(le.Uint32(b[36:])),
		code:   le.Uint32(b[40:]),
	}
	if !h.sum && h.crc != 0 {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "frame without a payload checksum has payload CRC %#x: the stream is corrupted", h.crc)
	}
	var ok bool
	switch h.flags {
	case flagXfer:
		inline := h.piece == 0 && uint64(h.length) == h.total && h.length <= MaxInline
		pieces := h.piece > 0 && h.piece <= MaxPiece && h.length == 0 && h.total > 0
		ok = inline || pieces
	case flagPiece:
		ok = h.length > 0 && h.length <= MaxPiece
	case flagFail:
		ok = h.length <= maxFailMsg
	case flagBye:
		ok = h.length == 0
	default:
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "unknown flags %#x", flags)
	}
	if !ok {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "frame with flags %#x: payload %d, transfer %d, piece %d out of range", h.flags, h.length, h.total, h.piece)
	}
	if h.seq != wantSeq {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "sequence number %d, want %d: frames were lost or reordered", h.seq, wantSeq)
	}
	return h, nil
}

// checkPayload verifies a payload against its header's checksum, if the
// sender computed one (flagCRC). A receiver whose own Options.Checksum is
// set (want) refuses a payload without one: both ends of a connection
// check, or the setting differs between the ranks.
func checkPayload(h header, p []byte, want bool) error {
	if !h.sum {
		if want {
			return gccl.Errorf(gccl.InvalidUsage, "frame", "frame %d carries no payload checksum, but GCCL_SOCKET_CHECKSUM is on here: set it the same on every rank", h.seq)
		}
		return nil
	}
	if got := crc32c(p); got != h.crc {
		return gccl.Errorf(gccl.SystemError, "frame", "payload checksum mismatch in frame %d (%#x, want %#x): data was corrupted in transit", h.seq, got, h.crc)
	}
	return nil
}

func crc32c(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// failureFrame encodes err as a failure record with sequence number seq:
// a header and the error's message (at most maxFailMsg bytes).
func failureFrame(seq uint64, err error) []byte {
	msg := []byte(err.Error())
	msg = msg[:min(len(msg), maxFailMsg)]
	code := gccl.Code(err)
	if code == gccl.Success {
		code = gccl.RemoteError
	}
	b := make([]byte, HeaderSize+len(msg))
	h := header{flags: flagFail, seq: seq, code: uint32(code)}
	h.setPayload(msg, true)
	h.put(b)
	copy(b[HeaderSize:], msg)
	return b
}

// writeFailure writes err's failure record to sock (see writeLast).
func writeFailure(sock gonet.Conn, seq uint64, err error) {
	writeLast(sock, failureFrame(seq, err))
}

// writeBye writes the bye of an orderly Close to sock (see writeLast): a
// peer that reads it knows the connection ended in order, not by a
// failure or a death (network.ErrPeerClosed).
func writeBye(sock gonet.Conn, seq uint64) {
	var b [HeaderSize]byte
	header{flags: flagBye, seq: seq}.put(b[:])
	writeLast(sock, b[:])
}

// writeLast writes a connection's last frame b to sock, giving up after
// 200 ms (best effort: the peer may be gone or stalled).
func writeLast(sock gonet.Conn, b []byte) {
	_ = sock.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	_, _ = sock.Write(b)
}

// failure is the error a failure record carries.
func failure(h header, msg []byte, what string) error {
	code := gccl.Result(h.code)
	if code == gccl.Success {
		code = gccl.RemoteError
	}
	return gccl.Errorf(code, what, "%s", msg)
}
