package opdesc

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

func TestWireRoundTrip(t *testing.T) {
	ops := []engine.Op{
		{Kind: algo.AllReduce, Count: 1 << 40, Type: gccl.Float64, Op: gccl.Avg},
		{Kind: algo.Reduce, Count: 3, Type: gccl.Int8, Op: gccl.NumBuiltinOps + 7, Root: 5},
		{Kind: algo.Broadcast, Count: 1, Type: gccl.Uint8, Root: 2},
		{Kind: algo.AllGather, Count: 0, Type: gccl.Int32},
	}
	for i := range ops {
		d := Coll(&ops[i], uint32(i)*1000+7)
		require.Equal(t, d, Of(d.Wire()), "%v", d)
	}
	s := P2P(&engine.Op{Kind: algo.P2PSend, Count: 9, Type: gccl.Int32, Peer: 1}, 0, 3, 4)
	require.Equal(t, s, Of(s.Wire()))
}

// TestCheck: a Recv accepts the peer's matching Send (same bytes in
// another type too) and nothing else; a collective accepts only its own
// descriptor and length.
func TestCheck(t *testing.T) {
	send := P2P(&engine.Op{Kind: algo.P2PSend, Count: 8, Type: gccl.Int32, Peer: 1}, 0, 3, 4)
	recv := P2P(&engine.Op{Kind: algo.P2PRecv, Count: 32, Type: gccl.Uint8, Peer: 0}, 1, 3, 4)
	require.NoError(t, recv.Check(1, 0, send.Wire(), 32, 32))
	later := P2P(&engine.Op{Kind: algo.P2PSend, Count: 8, Type: gccl.Int32, Peer: 1}, 0, 4, 4)
	err := recv.Check(1, 0, later.Wire(), 32, 32)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.ErrorIs(t, err, ErrDisagree)

	o := engine.Op{Kind: algo.AllReduce, Count: 10, Type: gccl.Int32, Op: gccl.Sum}
	d := Coll(&o, 2)
	require.NoError(t, d.Check(0, 1, d.Wire(), 40, 40))
	err = d.Check(0, 1, d.Wire(), 36, 40)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.NotErrorIs(t, err, ErrDisagree, "a length mismatch is a configuration difference")
	o.Op = gccl.Max
	require.ErrorIs(t, d.Check(0, 1, Coll(&o, 2).Wire(), 40, 40), ErrDisagree)
	require.ErrorIs(t, d.Check(0, 1, send.Wire(), 40, 40), ErrDisagree)
}
