package main

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayoutInPlaceMatchesNCCL(t *testing.T) {
	const n, rank = 4, 2
	ty := gccl.Float32
	for _, op := range perf.Ops() {
		size := int64(4096) * 4 * n
		out, err := newLayout(op, size, ty, rank, n, false)
		require.NoError(t, err)
		send, recv := out.place(1000, ty)
		assert.Equal(t, uintptr(1000), send)
		assert.Equal(t, uintptr(1000+4*out.sendElems), recv, "out of place, recv follows send")
		assert.Equal(t, out.sendElems+out.recvElems, out.memElems)
		assert.Equal(t, size, out.sizeBytes(ty, n), "%s", op)

		in, err := newLayout(op, size, ty, rank, n, true)
		if op == perf.SendRecv || op == perf.AllToAll {
			require.Error(t, err, "%s has no in-place form", op)
			continue
		}
		require.NoError(t, err)
		send, recv = in.place(1000, ty)
		switch op {
		case perf.AllGather: // sendbuff = recvbuff + rank*sendcount
			assert.Equal(t, recv+uintptr(rank*in.count*4), send)
		case perf.ReduceScatter: // recvbuff = sendbuff + rank*recvcount
			assert.Equal(t, send+uintptr(rank*in.count*4), recv)
		default:
			assert.Equal(t, send, recv)
		}
		assert.Equal(t, max(in.sendElems, in.recvElems), in.memElems)
	}
}

func TestInputsAreRangeIndependent(t *testing.T) {
	in := inputs{seed: 7, t: gccl.Float64}
	whole := in.of(3, 0, 5000)
	for _, r := range [][2]int{{0, 1}, {1023, 2}, {1024, 1024}, {4000, 1000}, {2500, 0}} {
		assert.Equal(t, whole[r[0]*8:(r[0]+r[1])*8], in.of(3, r[0], r[1]), "range %v", r)
	}
	assert.NotEqual(t, whole[:64], in.of(2, 0, 8), "ranks differ")
}

func TestExpectedAllToAllAndReduceScatter(t *testing.T) {
	const n, rank = 3, 1
	in := inputs{seed: 3, t: gccl.Int32}
	l, err := newLayout(perf.AllToAll, 3*10*4, gccl.Int32, rank, n, false)
	require.NoError(t, err)
	want, known := make([]byte, l.recvElems*4), make([]bool, l.recvElems)
	in.expect(want, known, l.expected(rank, n, 0), gccl.Sum)
	for j := range n {
		assert.Equal(t, in.of(j, rank*10, 10), want[j*40:(j+1)*40], "block from rank %d", j)
	}
	l, err = newLayout(perf.ReduceScatter, 3*10*4, gccl.Int32, rank, n, false)
	require.NoError(t, err)
	want, known = make([]byte, 40), make([]bool, 10)
	in.expect(want, known, l.expected(rank, n, 0), gccl.Sum)
	ref := reduce.Reference([][]byte{in.of(0, 10, 10), in.of(1, 10, 10), in.of(2, 10, 10)}, gccl.Int32, gccl.Sum, 0)
	assert.Equal(t, ref, want)
	assert.NotContains(t, known, false)
	l, _ = newLayout(perf.Reduce, 40, gccl.Int32, rank, n, false)
	assert.Nil(t, l.expected(rank, n, 0), "a non-root of reduce has nothing to check")
}

func TestCountWrongCountsEveryBadElement(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ty := range []gccl.DataType{gccl.Float32, gccl.Int8, gccl.BFloat16, gccl.Uint64} {
		want := make([]byte, 1000*ty.Size())
		reduce.Fill(want, ty, rng)
		got := append([]byte{}, want...)
		require.Zero(t, countWrong(got, want, ty, 4))
		bad := map[int]bool{}
		for len(bad) < 17 {
			bad[rng.IntN(1000)] = true
		}
		for i := range bad {
			got[i*ty.Size()+ty.Size()-1] ^= 0x40 // a high bit: far outside any tolerance
		}
		assert.Equal(t, int64(17), countWrong(got, want, ty, 4), "%v", ty)
	}
	assert.Equal(t, int64(3), countWrong(make([]byte, 12), make([]byte, 8), gccl.Int32, 2))
}

func TestStageAndVerify(t *testing.T) {
	d, err := device.NewHost(0, 0)
	require.NoError(t, err)
	ty := gccl.Float32
	l, err := newLayout(perf.AllGather, 4*4*64, ty, 1, 4, false)
	require.NoError(t, err)
	mem, err := d.Alloc(l.memElems * 4)
	require.NoError(t, err)
	defer d.Free(mem)
	in := inputs{seed: 5, t: ty}
	c := lib.Call{Op: perf.AllGather, Type: ty, Rank: 1, NRanks: 4}
	c.Send, c.Recv = l.place(mem, ty)
	st, err := stage(d, mem, l, in, c)
	require.NoError(t, err)
	assert.Equal(t, in.of(1, 0, 64), device.HostBytes(c.Send, 256), "input staged")
	wrong, err := verify(d, c.Recv, st, ty, 4, countWrong)
	require.NoError(t, err)
	assert.Equal(t, int64(4*64), wrong, "poison never passes")
	copy(device.HostBytes(c.Recv, len(st.want)), st.want)
	wrong, err = verify(d, c.Recv, st, ty, 4, countWrong)
	require.NoError(t, err)
	assert.Zero(t, wrong)
}
