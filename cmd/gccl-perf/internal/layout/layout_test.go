package layout

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayoutInPlaceMatchesNCCL(t *testing.T) {
	const n, rank = 4, 2
	ty := gccl.Float32
	for _, op := range perf.Ops() {
		size := int64(4096) * 4 * n
		out, err := New(op, size, ty, rank, n, false)
		require.NoError(t, err)
		send, recv := out.Place(1000, ty)
		assert.Equal(t, uintptr(1000), send)
		assert.Equal(t, uintptr(1000+4*out.SendElems), recv, "out of place, recv follows send")
		assert.Equal(t, out.SendElems+out.RecvElems, out.MemElems)
		assert.Equal(t, size, out.SizeBytes(ty, n), "%s", op)

		in, err := New(op, size, ty, rank, n, true)
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
