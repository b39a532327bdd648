package transport

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"

	"github.com/gccl/gccl"
	tnet "github.com/gccl/gccl/transport/internal/net"
	"github.com/gccl/gccl/transport/network"
)

// PeerInfo is what a rank publishes about itself (through the bootstrap
// all-gather) so that peers can connect to it.
type PeerInfo struct {
	Rank      int
	HostHash  uint64 // topo.HostHash of the rank's host
	ShmPrefix string // names its shared-memory rings; "" when it accepts no SHM
	NetName   string // its network provider ("socket", "ucx")
	NetHandle []byte // its listener's handle, which only that provider reads
}

const (
	peerInfoMagic   = 0x49504347 // "GCPI" little-endian
	peerInfoVersion = 2
	maxInfoString   = 255
	maxNetName      = 32
	// MaxPeerInfoSize bounds an encoded PeerInfo.
	MaxPeerInfoSize = 4 + 1 + 4 + 8 + 1 + maxInfoString + 1 + maxNetName + 1 + network.MaxHandleSize + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Validate checks the fields: rank in range, a prefix safe to use as a file
// name, a provider name and a handle of 1..network.MaxHandleSize bytes.
func (p PeerInfo) Validate() error {
	if p.Rank < 0 || p.Rank >= tnet.MaxRank {
		return gccl.Errorf(gccl.InvalidArgument, "Rank", "rank %d out of range (0..%d)", p.Rank, tnet.MaxRank-1)
	}
	if len(p.ShmPrefix) > maxInfoString || !safeName(p.ShmPrefix) {
		return gccl.Errorf(gccl.InvalidArgument, "ShmPrefix", "%q is not a valid shared-memory prefix (letters, digits, '-', '_', '.'; not starting with '.')", p.ShmPrefix)
	}
	if p.NetName == "" || len(p.NetName) > maxNetName || !safeName(p.NetName) {
		return gccl.Errorf(gccl.InvalidArgument, "NetName", "%q is not a network provider name", p.NetName)
	}
	if len(p.NetHandle) == 0 || len(p.NetHandle) > network.MaxHandleSize {
		return gccl.Errorf(gccl.InvalidArgument, "NetHandle", "handle of %d bytes (want 1..%d)", len(p.NetHandle), network.MaxHandleSize)
	}
	return nil
}

// safeName reports whether s can name a file in the SHM directory.
func safeName(s string) bool {
	if len(s) > 0 && s[0] == '.' {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// MarshalBinary encodes a valid PeerInfo: magic, version, rank, host hash,
// the length-prefixed prefix, provider name and handle, and a CRC32C of
// all that.
func (p PeerInfo) MarshalBinary() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	b := make([]byte, 0, MaxPeerInfoSize)
	b = le.AppendUint32(b, peerInfoMagic)
	b = append(b, peerInfoVersion)
	b = le.AppendUint32(b, uint32(p.Rank))
	b = le.AppendUint64(b, p.HostHash)
	b = append(b, byte(len(p.ShmPrefix)))
	b = append(b, p.ShmPrefix...)
	b = append(b, byte(len(p.NetName)))
	b = append(b, p.NetName...)
	b = append(b, byte(len(p.NetHandle)))
	b = append(b, p.NetHandle...)
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// UnmarshalBinary decodes what MarshalBinary made, rejecting anything
// truncated, oversized, corrupted or invalid.
func (p *PeerInfo) UnmarshalBinary(b []byte) error {
	bad := func(what string) error {
		return gccl.Errorf(gccl.InvalidArgument, "PeerInfo", "malformed peer info: %s", what)
	}
	le := binary.LittleEndian
	if len(b) < 4+1+4+8+1+1+1+4 || len(b) > MaxPeerInfoSize {
		return bad("length " + strconv.Itoa(len(b)))
	}
	body, sum := b[:len(b)-4], le.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return bad("checksum mismatch")
	}
	if le.Uint32(body) != peerInfoMagic || body[4] != peerInfoVersion {
		return bad("bad magic or version")
	}
	q := PeerInfo{Rank: int(le.Uint32(body[5:])), HostHash: le.Uint64(body[9:])}
	rest := string(body[17:]) // one copy backs every string field
	var ok bool
	if q.ShmPrefix, rest, ok = cutString(rest); !ok {
		return bad("truncated shared-memory prefix")
	}
	if q.NetName, rest, ok = cutString(rest); !ok {
		return bad("truncated provider name")
	}
	var handle string
	if handle, rest, ok = cutString(rest); !ok {
		return bad("truncated handle")
	}
	q.NetHandle = []byte(handle)
	if len(rest) != 0 {
		return bad("trailing bytes")
	}
	if err := q.Validate(); err != nil {
		return err
	}
	*p = q
	return nil
}

// cutString takes a one-byte-length-prefixed string off the front of s.
func cutString(s string) (field, rest string, ok bool) {
	if len(s) < 1 || len(s) < 1+int(s[0]) {
		return "", "", false
	}
	n := int(s[0])
	return s[1 : 1+n], s[1+n:], true
}
