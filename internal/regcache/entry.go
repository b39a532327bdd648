package regcache

import (
	"encoding/binary"
	"github.com/gccl/gccl/internal/fdpass"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

// entry is what one rank contributes to a collective registration's
// all-gather: its buffer and how a peer maps it, or why it has none.
type entry struct {
	Seq        uint64 // the collective Register call this belongs to
	PID        int64
	Registered bool // false: disabled, or failed (Msg says why)
	// Unreached, in mapPeers' verdict: this rank could not fetch a peer's
	// cuMem descriptor (Msg says why), so every rank stages.
	Unreached bool
	Kind      Kind
	Ordinal   int32
	Base      uintptr // the registered address in the owner's process
	Size      int     // the shared allocation's size
	Offset    int     // the buffer's offset in it
	Len       int     // the registered length
	IPC       cuda.IpcMemHandle
	FD        int32 // VMM: a file descriptor valid in the owner's process
	Region    string
	Msg       string // the owner's failure, if any
	// Host is the owner's topo.HostHash: cuMem descriptors and CUDA IPC
	// handles reach only ranks of the same host.
	Host uint64
	// Sock and Token, for VMM: the abstract unix socket on which the owner
	// serves its descriptor to peer processes during the exchange, and the
	// secret a peer presents there (internal/fdpass).
	Sock  string
	Token [fdpass.TokenLen]byte
}

const (
	entryMagic   = 0x47455242 // "BREG"
	entryVersion = 2
	entryFixed   = 4 + 2 + 8 + 8 + 1 + 1 + 4 + 8*4 + 64 + 4 + 8 + fdpass.TokenLen + 2 + 2 + 2
	maxEntryStr  = 1024
)

// marshal encodes e; strings longer than maxEntryStr are cut, and a
// socket name longer than fdpass.MaxName is dropped (a peer then cannot fetch
// the descriptor and every rank fails the registration together).
func (e entry) marshal() []byte {
	le := binary.LittleEndian
	region, msg, sock := cut(e.Region), cut(e.Msg), e.Sock
	if len(sock) > fdpass.MaxName {
		sock = ""
	}
	b := make([]byte, 0, entryFixed+len(region)+len(msg)+len(sock))
	b = le.AppendUint32(b, entryMagic)
	b = le.AppendUint16(b, entryVersion)
	b = le.AppendUint64(b, e.Seq)
	b = le.AppendUint64(b, uint64(e.PID))
	var reg byte // flags: 1 registered, 2 unreached
	if e.Registered {
		reg = 1
	}
	if e.Unreached {
		reg |= 2
	}
	b = append(b, reg, byte(e.Kind))
	b = le.AppendUint32(b, uint32(e.Ordinal))
	for _, v := range []uint64{uint64(e.Base), uint64(e.Size), uint64(e.Offset), uint64(e.Len)} {
		b = le.AppendUint64(b, v)
	}
	b = append(b, e.IPC[:]...)
	b = le.AppendUint32(b, uint32(e.FD))
	b = le.AppendUint64(b, e.Host)
	b = append(b, e.Token[:]...)
	b = le.AppendUint16(b, uint16(len(region)))
	b = le.AppendUint16(b, uint16(len(msg)))
	b = le.AppendUint16(b, uint16(len(sock)))
	return append(append(append(b, region...), msg...), sock...)
}

func cut(s string) string {
	if len(s) > maxEntryStr {
		return s[:maxEntryStr]
	}
	return s
}

// unmarshal decodes what marshal made, bounding every length and value.
func (e *entry) unmarshal(b []byte) error {
	le := binary.LittleEndian
	if len(b) < entryFixed || le.Uint32(b) != entryMagic || le.Uint16(b[4:]) != entryVersion {
		return gccl.Errorf(gccl.RemoteError, "entry", "not a registration entry (%d bytes); are all ranks running the same gccl?", len(b))
	}
	*e = entry{Seq: le.Uint64(b[6:]), PID: int64(le.Uint64(b[14:])), Registered: b[22]&1 != 0, Unreached: b[22]&2 != 0, Kind: Kind(b[23]),
		Ordinal: int32(le.Uint32(b[24:]))}
	var v [4]uint64
	for i := range v {
		v[i] = le.Uint64(b[28+8*i:])
	}
	if b[22] > 3 || v[1] > 1<<50 || v[2] > v[1] || v[3] > v[1]-v[2] {
		return gccl.Errorf(gccl.RemoteError, "entry", "registration entry describes %d bytes at offset %d of %d", v[3], v[2], v[1])
	}
	e.Base, e.Size, e.Offset, e.Len = uintptr(v[0]), int(v[1]), int(v[2]), int(v[3])
	copy(e.IPC[:], b[60:124])
	e.FD = int32(le.Uint32(b[124:]))
	e.Host = le.Uint64(b[128:])
	copy(e.Token[:], b[136:136+fdpass.TokenLen])
	nr, nm, ns := int(le.Uint16(b[152:])), int(le.Uint16(b[154:])), int(le.Uint16(b[156:]))
	if nr > maxEntryStr || nm > maxEntryStr || ns > fdpass.MaxName || len(b) != entryFixed+nr+nm+ns {
		return gccl.Errorf(gccl.RemoteError, "entry", "registration entry of %d bytes cannot hold strings of %d, %d and %d bytes", len(b), nr, nm, ns)
	}
	str := b[entryFixed:]
	e.Region, e.Msg, e.Sock = string(str[:nr]), string(str[nr:nr+nm]), string(str[nr+nm:])
	if e.Registered && (e.Kind < Host || e.Kind > Legacy || e.Len == 0) {
		return gccl.Errorf(gccl.RemoteError, "entry", "registration entry of kind %v and %d bytes", e.Kind, e.Len)
	}
	return nil
}
