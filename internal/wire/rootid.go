package wire

import (
	"encoding/binary"
	"net/netip"
)

// IDBytes is the size of an encoded unique ID (NCCL_UNIQUE_ID_BYTES).
const IDBytes = 128

// Layout of an encoded RootID.
const (
	idMagic     = 0x64696367 // "gcid"
	idVersion   = 1
	offVersion  = 4
	offIPLen    = 5
	offPort     = 6
	offIP       = 8
	offKey      = 24
	offSecret   = 40
	offReserved = 56
	offCRC      = IDBytes - 4
)

// RootID is what a unique ID carries: where the root listens, which
// rendezvous at that root (Key), and the secret that admits ranks to it.
type RootID struct {
	Addr   netip.AddrPort
	Key    Key
	Secret Secret
}

// Encode returns the 128-byte form of id: magic, version, address, key,
// secret, zero padding and a CRC32C of everything before it.
func (id *RootID) Encode() [IDBytes]byte {
	var b [IDBytes]byte
	binary.LittleEndian.PutUint32(b[0:], idMagic)
	b[offVersion] = idVersion
	ip := id.Addr.Addr().Unmap()
	raw := ip.AsSlice()
	b[offIPLen] = byte(len(raw))
	binary.LittleEndian.PutUint16(b[offPort:], id.Addr.Port())
	copy(b[offIP:offKey], raw)
	copy(b[offKey:], id.Key[:])
	copy(b[offSecret:], id.Secret[:])
	binary.LittleEndian.PutUint32(b[offCRC:], Checksum(b[:offCRC]))
	return b
}

// DecodeRootID parses and validates an encoded unique ID. Anything that is
// not exactly what Encode makes (wrong length, magic, version, checksum,
// address or padding) is rejected with an InvalidArgument error.
func DecodeRootID(b []byte) (RootID, error) {
	if len(b) != IDBytes {
		return RootID{}, badID("%d bytes, want %d", len(b), IDBytes)
	}
	if m := binary.LittleEndian.Uint32(b); m != idMagic {
		return RootID{}, badID("bad magic %#x: not a gccl unique ID (an NCCL ID or random bytes?)", m)
	}
	if b[offVersion] != idVersion {
		return RootID{}, badID("format version %d, want %d: made by another gccl version", b[offVersion], idVersion)
	}
	if c, want := Checksum(b[:offCRC]), binary.LittleEndian.Uint32(b[offCRC:]); c != want {
		return RootID{}, badID("checksum %#x, want %#x: the ID was corrupted in transit", c, want)
	}
	n := int(b[offIPLen])
	if n != 4 && n != 16 {
		return RootID{}, badID("address length %d", n)
	}
	for _, x := range b[offIP+n : offKey] {
		if x != 0 {
			return RootID{}, badID("nonzero padding after the address")
		}
	}
	for _, x := range b[offReserved:offCRC] {
		if x != 0 {
			return RootID{}, badID("nonzero reserved bytes")
		}
	}
	ip, _ := netip.AddrFromSlice(b[offIP : offIP+n])
	port := binary.LittleEndian.Uint16(b[offPort:])
	if port == 0 || !ip.IsValid() || ip.IsUnspecified() || (n == 16 && ip.Is4In6()) {
		return RootID{}, badID("root address %v:%d cannot be dialled", ip, port)
	}
	id := RootID{Addr: netip.AddrPortFrom(ip, port)}
	copy(id.Key[:], b[offKey:])
	copy(id.Secret[:], b[offSecret:])
	return id, nil
}

func badID(format string, a ...any) error {
	return corruptArg("uniqueId", "invalid unique ID: "+format, a...)
}
