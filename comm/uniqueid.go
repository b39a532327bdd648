package comm

import (
	"encoding/hex"
	"errors"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/bootstrap"
	"github.com/gccl/gccl/internal/wire"
)

// UniqueIDBytes is the size of a unique ID, as NCCL_UNIQUE_ID_BYTES.
const UniqueIDBytes = 128

// The wire encoding fills a UniqueID exactly (a compile-time check).
var _ = [1]struct{}{}[UniqueIDBytes-wire.IDBytes]

// UniqueID identifies one communicator creation: it carries the root's
// socket address, the rendezvous key and a 128-bit random secret, guarded by
// a checksum. It can create exactly one communicator; make one per
// communicator. Treat it as a credential: anyone holding it may join.
type UniqueID [UniqueIDBytes]byte

// NewUniqueID makes an ID for a new communicator. It starts (once per
// process) the rendezvous listener that the ranks will dial, so the calling
// process must stay alive until every rank has finished InitRank.
func NewUniqueID() (UniqueID, error) {
	id, err := bootstrap.NewRootID()
	if err != nil {
		return UniqueID{}, err
	}
	return id.Encode(), nil
}

// ParseUniqueID checks that b is a unique ID made by NewUniqueID (length,
// magic, version and checksum) and returns it.
func ParseUniqueID(b []byte) (UniqueID, error) {
	if _, err := wire.DecodeRootID(b); err != nil {
		return UniqueID{}, err
	}
	return UniqueID(b), nil
}

// Bytes returns the ID's bytes, to send to the other ranks.
func (id UniqueID) Bytes() []byte { return id[:] }

// String returns the ID in hex, for passing through text channels.
func (id UniqueID) String() string { return hex.EncodeToString(id[:]) }

// root decodes the ID, reporting a corrupted or foreign one.
func (id UniqueID) root() (wire.RootID, error) {
	r, err := wire.DecodeRootID(id[:])
	if err != nil {
		msg := err.Error()
		var ge *gccl.Error
		if errors.As(err, &ge) {
			msg = ge.Msg // the code and the argument are said once, here
		}
		return wire.RootID{}, gccl.Errorf(gccl.InvalidArgument, "uniqueId", "%s; pass the bytes NewUniqueID made, unchanged", msg)
	}
	return r, nil
}
