package bufreg

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/gccl/gccl"
)

// Buf is one buffer of an operation as this rank sees it.
type Buf struct {
	Name       string // for messages ("sendbuff"); not sent to peers
	Registered bool   // found by Lookup (or ForGraph)
	Offset     int    // offset from the start of its registration
}

// Desc is what a rank contributes to Agree for one operation.
type Desc struct {
	Bufs []Buf
	// SameOffset says the zero-copy path needs each buffer at the same
	// offset from its registration on every rank (peers address it by
	// offset).
	SameOffset bool
	// Fallback says this rank may run the operation through staging
	// buffers when the ranks disagree, instead of failing: graph
	// registration is opportunistic, local registration is a promise.
	Fallback bool
}

// DescFor builds this rank's Desc for the buffers [ptrs[i], ptrs[i]+sizes[i])
// of an operation on c; names label them in errors.
func DescFor(c Comm, names []string, ptrs []uintptr, sizes []int) Desc {
	var d Desc
	for i, p := range ptrs {
		_, off, ok := Lookup(c, p, sizes[i])
		d.Bufs = append(d.Bufs, Buf{Name: names[i], Registered: ok, Offset: off})
	}
	return d
}

const (
	descMagic   = 0x52 // 'R'
	descVersion = 1
	maxBufs     = 64
	flagSame    = 1
	flagFall    = 2
)

// MarshalBinary encodes d for the all-gather (names are not sent).
func (d Desc) MarshalBinary() ([]byte, error) {
	if len(d.Bufs) > maxBufs {
		return nil, gccl.Errorf(gccl.InvalidArgument, "desc", "%d buffers in one operation; at most %d", len(d.Bufs), maxBufs)
	}
	var flags byte
	if d.SameOffset {
		flags |= flagSame
	}
	if d.Fallback {
		flags |= flagFall
	}
	b := []byte{descMagic, descVersion, flags, byte(len(d.Bufs))}
	for _, x := range d.Bufs {
		var reg byte
		if x.Registered {
			reg = 1
		}
		b = append(b, reg)
		b = binary.LittleEndian.AppendUint64(b, uint64(x.Offset))
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary made, bounding every length.
func (d *Desc) UnmarshalBinary(b []byte) error {
	if len(b) < 4 || b[0] != descMagic || b[1] != descVersion || b[2]&^(flagSame|flagFall) != 0 {
		return gccl.Errorf(gccl.InternalError, "desc", "not a registration descriptor (%d bytes)", len(b))
	}
	n := int(b[3])
	if n > maxBufs || len(b) != 4+9*n {
		return gccl.Errorf(gccl.InternalError, "desc", "descriptor of %d bytes cannot hold %d buffers", len(b), n)
	}
	*d = Desc{SameOffset: b[2]&flagSame != 0, Fallback: b[2]&flagFall != 0, Bufs: make([]Buf, n)}
	for i := range n {
		e := b[4+9*i:]
		off := binary.LittleEndian.Uint64(e[1:])
		if e[0] > 1 || off > 1<<62 {
			return gccl.Errorf(gccl.InternalError, "desc", "buffer %d of the descriptor is malformed", i)
		}
		d.Bufs[i] = Buf{Registered: e[0] == 1, Offset: int(off)}
	}
	return nil
}

// Agree checks collectively that the ranks agree on registration for one
// operation: every buffer registered on all ranks or on none, and, where
// the path needs it, at the same offset on every rank. allgather is the
// communicator's all-gather of small messages (bootstrap.Net.AllGather);
// every rank calls Agree for the same operation and gets the same answer.
//
// It returns true when every rank registered every buffer (the zero-copy
// path may run), false when none did, or when they disagree and every
// rank allows Fallback. Disagreement otherwise is gccl.ErrInvalidUsage,
// naming the buffer and the ranks: NCCL calls this undefined behaviour;
// gccl reports it on every rank.
func Agree(ctx context.Context, allgather func(context.Context, []byte) ([][]byte, error), mine Desc) (bool, error) {
	if allgather == nil {
		return false, gccl.Errorf(gccl.InvalidArgument, "allgather", "nil all-gather function")
	}
	b, err := mine.MarshalBinary()
	if err != nil {
		return false, err
	}
	all, err := allgather(ctx, b)
	if err != nil {
		return false, fmt.Errorf("exchanging buffer registrations: %w", err)
	}
	descs := make([]Desc, len(all))
	for i, raw := range all {
		if err := descs[i].UnmarshalBinary(raw); err != nil {
			return false, gccl.Errorf(gccl.InternalError, fmt.Sprintf("rank %d", i), "registration descriptor: %w", err)
		}
	}
	return decide(descs, mine)
}

// decide is Agree's verdict on the gathered descriptors.
func decide(descs []Desc, mine Desc) (bool, error) {
	if len(descs) == 0 {
		return false, gccl.Errorf(gccl.InternalError, "allgather", "all-gather returned no descriptors")
	}
	fallback, same := true, descs[0].SameOffset
	for r, d := range descs {
		if len(d.Bufs) != len(descs[0].Bufs) || d.SameOffset != same {
			return false, gccl.Errorf(gccl.InvalidUsage, fmt.Sprintf("rank %d", r),
				"rank %d passed %d buffers (same offsets %v) but rank 0 passed %d (%v); the ranks called different operations",
				r, len(d.Bufs), d.SameOffset, len(descs[0].Bufs), same)
		}
		fallback = fallback && d.Fallback
	}
	all := true
	for i := range descs[0].Bufs {
		err := checkBuf(descs, i, bufName(mine, i), same)
		if err != nil && fallback {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		all = all && descs[0].Bufs[i].Registered
	}
	return all, nil
}

func bufName(mine Desc, i int) string {
	if i < len(mine.Bufs) && mine.Bufs[i].Name != "" {
		return mine.Bufs[i].Name
	}
	return fmt.Sprintf("buffer %d", i)
}

// checkBuf checks buffer i across the ranks.
func checkBuf(descs []Desc, i int, name string, same bool) error {
	var reg, unreg []int
	for r, d := range descs {
		if d.Bufs[i].Registered {
			reg = append(reg, r)
		} else {
			unreg = append(unreg, r)
		}
	}
	if len(reg) > 0 && len(unreg) > 0 {
		return gccl.Errorf(gccl.InvalidUsage, name,
			"registered on ranks %v but not on ranks %v; register it on every rank or on none", short(reg), short(unreg))
	}
	if !same || len(unreg) > 0 {
		return nil
	}
	for r, d := range descs {
		if a, b := descs[0].Bufs[i].Offset, d.Bufs[i].Offset; a != b {
			return gccl.Errorf(gccl.InvalidUsage, name,
				"at offset %d from its registration on rank 0 but %d on rank %d; this path needs the same offset on every rank", a, b, r)
		}
	}
	return nil
}

// short keeps rank lists in messages readable.
func short(rs []int) []int {
	if len(rs) > 8 {
		return slices.Clip(rs[:8])
	}
	return rs
}
