package net

import (
	"encoding/binary"
	"hash/crc32"
	gonet "net"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/internal/msg"
)

// Frame header layout: magic, payload length, sequence number, payload
// CRC32C, flags; on the first frame of a message the message's length and
// descriptor; on a failure frame the error's code; the header's CRC32C.
const (
	frameMagic  = 0x32464347 // "GCF2" little-endian
	HeaderSize  = 64
	hdrCRCStart = 60 // bytes [0,60) are covered by the header CRC at [60,64)

	flagFirst = 1 // the first frame of a message: msgLen and desc are set
	flagFail  = 2 // a failure record: the payload is the error's message, code its code

	// MaxChunkSize bounds the payload of one frame (and so Options.ChunkSize).
	MaxChunkSize = 16 << 20
	// DefaultChunkSize is the payload of one frame when Options leaves it 0.
	DefaultChunkSize = 256 << 10
	// maxFailMsg bounds a failure record's message.
	maxFailMsg = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is one frame's header, decoded.
type header struct {
	length int
	seq    uint64
	crc    uint32 // CRC32C of the payload
	flags  uint32
	msgLen uint64   // flagFirst: the message's length
	desc   msg.Desc // flagFirst: the message's descriptor
	code   uint32   // flagFail: the error's code
}

// put writes h into b[:HeaderSize].
func (h header) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], frameMagic)
	le.PutUint32(b[4:], uint32(h.length))
	le.PutUint64(b[8:], h.seq)
	le.PutUint32(b[16:], h.crc)
	le.PutUint32(b[20:], h.flags)
	le.PutUint64(b[24:], h.msgLen)
	copy(b[32:32+msg.DescSize], h.desc[:])
	le.PutUint32(b[56:], h.code)
	le.PutUint32(b[hdrCRCStart:], crc32.Checksum(b[:hdrCRCStart], castagnoli))
}

// parseHeader decodes and validates a frame header: magic, header checksum,
// a payload length in 0..MaxChunkSize (0 only for a message's first
// frame), known flags and the expected sequence number.
func parseHeader(b []byte, wantSeq uint64) (header, error) {
	le := binary.LittleEndian
	if len(b) < HeaderSize {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "header is %d bytes, want %d", len(b), HeaderSize)
	}
	if m := le.Uint32(b[0:]); m != frameMagic {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "bad magic %#x: the stream is corrupted or not a gccl peer", m)
	}
	if got, want := le.Uint32(b[hdrCRCStart:]), crc32.Checksum(b[:hdrCRCStart], castagnoli); got != want {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "header checksum mismatch (%#x, want %#x): the stream is corrupted", got, want)
	}
	h := header{
		length: int(le.Uint32(b[4:])),
		seq:    le.Uint64(b[8:]),
		crc:    le.Uint32(b[16:]),
		flags:  le.Uint32(b[20:]),
		msgLen: le.Uint64(b[24:]),
		desc:   msg.Desc(b[32 : 32+msg.DescSize]),
		code:   le.Uint32(b[56:]),
	}
	switch {
	case h.flags&^(flagFirst|flagFail) != 0 || h.flags == flagFirst|flagFail:
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "unknown flags %#x", h.flags)
	case h.length < 0 || h.length > MaxChunkSize || h.length == 0 && h.flags == 0:
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "payload length %d out of range (1..%d)", h.length, MaxChunkSize)
	case h.flags == flagFirst && uint64(h.length) > h.msgLen, h.flags == flagFail && h.length > maxFailMsg:
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "payload length %d out of range for a frame with flags %#x", h.length, h.flags)
	}
	if h.seq != wantSeq {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "sequence number %d, want %d: frames were lost or reordered", h.seq, wantSeq)
	}
	return h, nil
}

// checkPayload verifies a payload against its header's checksum.
func checkPayload(h header, p []byte) error {
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
	header{length: len(msg), seq: seq, crc: crc32c(msg), flags: flagFail, code: uint32(code)}.put(b)
	copy(b[HeaderSize:], msg)
	return b
}

// writeFailure writes err's failure record to sock, giving up after
// 200 ms (best effort: the peer may be gone or stalled).
func writeFailure(sock gonet.Conn, seq uint64, err error) {
	_ = sock.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	_, _ = sock.Write(failureFrame(seq, err))
}

// failure is the error a failure record carries.
func failure(h header, msg []byte, what string) error {
	code := gccl.Result(h.code)
	if code == gccl.Success {
		code = gccl.RemoteError
	}
	return gccl.Errorf(code, what, "%s", msg)
}
