package net

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/gccl/gccl"
)

// Frame header layout.
const (
	frameMagic  = 0x31464347 // "GCF1" little-endian
	HeaderSize  = 24
	hdrCRCStart = 20 // bytes [0,20) are covered by the header CRC at [20,24)

	// MaxChunkSize bounds the payload of one frame (and so Options.ChunkSize).
	MaxChunkSize = 16 << 20
	// DefaultChunkSize is the payload of one frame when Options leaves it 0.
	DefaultChunkSize = 256 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is one frame's header, decoded.
type header struct {
	length int
	seq    uint64
	crc    uint32 // CRC32C of the payload
}

// put writes h into b[:HeaderSize].
func (h header) put(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], frameMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(h.length))
	binary.LittleEndian.PutUint64(b[8:], h.seq)
	binary.LittleEndian.PutUint32(b[16:], h.crc)
	binary.LittleEndian.PutUint32(b[hdrCRCStart:], crc32.Checksum(b[:hdrCRCStart], castagnoli))
}

// parseHeader decodes and validates a frame header: magic, header checksum,
// a payload length in 1..MaxChunkSize and the expected sequence number.
func parseHeader(b []byte, wantSeq uint64) (header, error) {
	if len(b) < HeaderSize {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "header is %d bytes, want %d", len(b), HeaderSize)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != frameMagic {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "bad magic %#x: the stream is corrupted or not a gccl peer", m)
	}
	if got, want := binary.LittleEndian.Uint32(b[hdrCRCStart:]), crc32.Checksum(b[:hdrCRCStart], castagnoli); got != want {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "header checksum mismatch (%#x, want %#x): the stream is corrupted", got, want)
	}
	h := header{
		length: int(binary.LittleEndian.Uint32(b[4:])),
		seq:    binary.LittleEndian.Uint64(b[8:]),
		crc:    binary.LittleEndian.Uint32(b[16:]),
	}
	if h.length <= 0 || h.length > MaxChunkSize {
		return header{}, gccl.Errorf(gccl.RemoteError, "frame", "payload length %d out of range (1..%d)", h.length, MaxChunkSize)
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
