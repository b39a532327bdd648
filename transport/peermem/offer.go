package peermem

import (
	"encoding/binary"
	"os"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/transport/topo"
)

// offerMagic starts every marshalled Offer ("GP2P" little-endian, version 1).
const (
	offerMagic   = 0x50325047
	offerVersion = 1
	// OfferBytes is the size of a marshalled Offer.
	OfferBytes = 4 + 4 + 8 + 8 + 4 + 8 + 8 + 64
)

// Offer is what one rank publishes about one device allocation.
type Offer struct {
	PID      int64
	HostHash uint64
	Ordinal  int32
	Ptr      uintptr // valid in the offering process only
	Size     uint64
	Handle   cuda.IpcMemHandle
}

// NewOffer describes size bytes at p (from cuMemAlloc on GPU ordinal) for
// the peers; the current context must be the allocation's.
func NewOffer(drv cuda.Driver, ordinal int, hostHash uint64, p uintptr, size int) (Offer, error) {
	if p == 0 || size <= 0 {
		return Offer{}, gccl.Errorf(gccl.InvalidArgument, "p", "cannot offer %d bytes at %#x", size, p)
	}
	h, err := drv.IpcGetMemHandle(p)
	if err != nil {
		return Offer{}, gccl.Errorf(gccl.Code(err), "peermem", "exporting the communication buffer: %w", err)
	}
	return Offer{PID: int64(os.Getpid()), HostHash: hostHash, Ordinal: int32(ordinal), Ptr: p, Size: uint64(size), Handle: h}, nil
}

// MarshalBinary encodes the offer in OfferBytes bytes.
func (o Offer) MarshalBinary() ([]byte, error) {
	le := binary.LittleEndian
	b := make([]byte, 0, OfferBytes)
	b = le.AppendUint32(b, offerMagic)
	b = le.AppendUint32(b, offerVersion)
	b = le.AppendUint64(b, uint64(o.PID))
	b = le.AppendUint64(b, o.HostHash)
	b = le.AppendUint32(b, uint32(o.Ordinal))
	b = le.AppendUint64(b, uint64(o.Ptr))
	b = le.AppendUint64(b, o.Size)
	return append(b, o.Handle[:]...), nil
}

// UnmarshalBinary decodes an offer, refusing anything but OfferBytes bytes
// of the current version.
func (o *Offer) UnmarshalBinary(b []byte) error {
	le := binary.LittleEndian
	if len(b) != OfferBytes || le.Uint32(b) != offerMagic || le.Uint32(b[4:]) != offerVersion {
		return gccl.Errorf(gccl.RemoteError, "offer", "malformed peer-memory offer (%d bytes); are all ranks running the same gccl?", len(b))
	}
	o.PID = int64(le.Uint64(b[8:]))
	o.HostHash = le.Uint64(b[16:])
	o.Ordinal = int32(le.Uint32(b[24:]))
	o.Ptr = uintptr(le.Uint64(b[28:]))
	o.Size = le.Uint64(b[36:])
	copy(o.Handle[:], b[44:])
	return nil
}

// SameHost reports whether every offer comes from the host of offers[me].
func SameHost(me int, offers []Offer) bool {
	for _, o := range offers {
		if !topo.SameHost(o.HostHash, offers[me].HostHash) {
			return false
		}
	}
	return true
}

// sameProcess reports whether o was made by this process.
func (o Offer) sameProcess() bool { return o.PID == int64(os.Getpid()) }
