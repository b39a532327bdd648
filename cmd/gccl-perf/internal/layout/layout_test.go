package layout

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayoutInPlaceMatchesNCCL(t *testing.T) {
	const n, rank = 4, 2
	ty := gccl.Float32
	for _, op := range perf.Ops() {
		if op == perf.Halo {
			continue // TestHaloLayout
		}
		size := int64(4096) * 4 * n
		spec := Spec{Op: op, Type: ty, Rank: rank, NRanks: n}
		out, err := spec.New(size)
		require.NoError(t, err)
		send, recv := out.Place(1000, ty)
		assert.Equal(t, uintptr(1000), send)
		assert.Equal(t, uintptr(1000+4*out.SendElems), recv, "out of place, recv follows send")
		assert.Equal(t, out.SendElems+out.RecvElems, out.MemElems)
		assert.Equal(t, size, out.SizeBytes(ty, n), "%s", op)
		assert.Equal(t, size, out.AlgBytes(ty, n), "%s", op)

		spec.InPlace = true
		in, err := spec.New(size)
		if op == perf.SendRecv || op == perf.AllToAll {
			require.Error(t, err, "%s has no in-place form", op)
			continue
		}
		require.NoError(t, err)
		send, recv = in.Place(1000, ty)
		switch op {
		case perf.AllGather: // sendbuff = recvbuff + rank*sendcount
			assert.Equal(t, recv+uintptr(rank*in.Count*4), send)
		case perf.ReduceScatter: // recvbuff = sendbuff + rank*recvcount
			assert.Equal(t, send+uintptr(rank*in.Count*4), recv)
		default:
			assert.Equal(t, send, recv)
		}
		assert.Equal(t, max(in.SendElems, in.RecvElems), in.MemElems)
	}
}

// Halo: the size is one face; a rank holds a face and a halo per side; the
// algorithm bandwidth counts the faces a rank sends, fewer at open edges.
func TestHaloLayout(t *testing.T) {
	ty := gccl.Float64
	grid := p2p.Cart{Dims: []int{2, 2, 1}, Periodic: []bool{true, true, true}}
	spec := Spec{Op: perf.Halo, Type: ty, Rank: 3, NRanks: 4, Grid: grid}
	l, err := spec.New(1024)
	require.NoError(t, err)
	assert.Equal(t, 128, l.Count, "one face")
	assert.Equal(t, [3]int{6 * 128, 6 * 128, 12 * 128}, [3]int{l.SendElems, l.RecvElems, l.MemElems})
	assert.Equal(t, int64(1024), l.SizeBytes(ty, 4))
	assert.Equal(t, int64(6*1024), l.AlgBytes(ty, 4), "every side has a neighbour (itself along the third)")

	spec.Grid = p2p.Cart{Dims: []int{4, 1}} // a chain: the ends send 1 face, the middle ranks 2
	l, err = spec.New(1024)
	require.NoError(t, err)
	assert.Equal(t, int64(6*1024/4), l.AlgBytes(ty, 4))

	spec.InPlace = true
	_, err = spec.New(1024)
	require.Error(t, err, "halo has distinct send and receive buffers")
}
