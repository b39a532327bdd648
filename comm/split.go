package comm

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/progress"
)

// SplitNoColor is the colour of a rank that joins no sub-communicator.
const SplitNoColor = -1

// member is one parent rank's Split arguments.
type member struct {
	rank, color, key int
	valid            bool
}

// Split creates sub-communicators: parent ranks passing the same colour form
// one, ranked by key (ties by parent rank). Every rank of c must call Split,
// in the same order as its other Splits; a rank passing SplitNoColor gets
// (nil, nil). A nil cfg inherits c's configuration. If any rank passes a
// negative colour other than SplitNoColor, every rank gets
// gccl.ErrInvalidArgument.
func (c *Comm) Split(color, key int, cfg *Config) (*Comm, error) {
	if err := c.open(); err != nil {
		return nil, err
	}
	if cfg == nil {
		inherit := c.cfg
		inherit.DeviceSet = true
		cfg = &inherit
	}
	defer progress.Enter(true)()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	tag := -int(c.splitSeq.Add(1)) // negative tags are the comm package's own
	mine := member{rank: c.rank, color: color, key: key, valid: color >= 0 || color == SplitNoColor}
	all, err := c.boot.AllGather(ctx, encodeMember(mine))
	if err != nil {
		return nil, gccl.Errorf(gccl.Code(err), "comm", "split: exchanging colours: %w", err)
	}
	members, err := decodeMembers(all)
	if err != nil {
		return nil, err
	}
	if color == SplitNoColor {
		return nil, nil
	}
	var group []member
	for _, m := range members {
		if m.color == color {
			group = append(group, m)
		}
	}
	slices.SortFunc(group, func(a, b member) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.rank, b.rank)) })
	id, err := c.splitID(ctx, group, tag)
	if err != nil {
		return nil, err
	}
	newRank := slices.IndexFunc(group, func(m member) bool { return m.rank == c.rank })
	return InitRankConfig(len(group), id, newRank, cfg)
}

// splitID has the lowest parent rank of the group make the group's unique
// ID and send it to the others over the parent's bootstrap. An empty
// message tells them the leader failed.
func (c *Comm) splitID(ctx context.Context, group []member, tag int) (UniqueID, error) {
	leader := group[0].rank
	for _, m := range group {
		leader = min(leader, m.rank)
	}
	if c.rank != leader {
		b, err := c.boot.Recv(ctx, leader, tag)
		if err != nil {
			return UniqueID{}, gccl.Errorf(gccl.Code(err), "comm", "split: waiting for the new ID from rank %d: %w", leader, err)
		}
		if len(b) == 0 {
			return UniqueID{}, gccl.Errorf(gccl.RemoteError, "comm", "split: rank %d failed to create the new communicator's ID", leader)
		}
		return ParseUniqueID(b)
	}
	id, idErr := NewUniqueID()
	msg := id.Bytes()
	if idErr != nil {
		msg = nil
	}
	for _, m := range group {
		if m.rank != c.rank {
			if err := c.boot.Send(ctx, m.rank, tag, msg); err != nil {
				return UniqueID{}, gccl.Errorf(gccl.Code(err), "comm", "split: sending the new ID to rank %d: %w", m.rank, err)
			}
		}
	}
	return id, idErr
}

const memberBytes = 17

func encodeMember(m member) []byte {
	b := make([]byte, memberBytes)
	binary.LittleEndian.PutUint64(b, uint64(int64(m.color)))
	binary.LittleEndian.PutUint64(b[8:], uint64(int64(m.key)))
	if m.valid {
		b[16] = 1
	}
	return b
}

// decodeMembers parses every rank's Split arguments and fails if any rank
// passed an invalid colour.
func decodeMembers(all [][]byte) ([]member, error) {
	ms := make([]member, len(all))
	var bad []int
	for r, b := range all {
		if len(b) != memberBytes {
			return nil, gccl.Errorf(gccl.RemoteError, "comm", "split: rank %d sent %d bytes, want %d", r, len(b), memberBytes)
		}
		ms[r] = member{rank: r, color: int(int64(binary.LittleEndian.Uint64(b))),
			key: int(int64(binary.LittleEndian.Uint64(b[8:]))), valid: b[16] == 1}
		if !ms[r].valid {
			bad = append(bad, r)
		}
	}
	if len(bad) > 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "color",
			"split: ranks %v passed a negative colour other than SplitNoColor (%d); use colours >= 0", bad, SplitNoColor)
	}
	return ms, nil
}
