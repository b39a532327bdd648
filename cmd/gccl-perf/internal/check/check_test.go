package check

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/layout"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInputsAreRangeIndependent(t *testing.T) {
	in := Inputs{Seed: 7, Type: gccl.Float64}
	whole := in.of(3, 0, 5000)
	for _, r := range [][2]int{{0, 1}, {1023, 2}, {1024, 1024}, {4000, 1000}, {2500, 0}} {
		assert.Equal(t, whole[r[0]*8:(r[0]+r[1])*8], in.of(3, r[0], r[1]), "range %v", r)
	}
	assert.NotEqual(t, whole[:64], in.of(2, 0, 8), "ranks differ")
}

func TestExpectedAllToAllAndReduceScatter(t *testing.T) {
	const n, rank = 3, 1
	in := Inputs{Seed: 3, Type: gccl.Int32}
	l, err := layout.Spec{Op: perf.AllToAll, Type: gccl.Int32, Rank: rank, NRanks: n}.New(3 * 10 * 4)
	require.NoError(t, err)
	want, known := make([]byte, l.RecvElems*4), make([]bool, l.RecvElems)
	in.expect(want, known, expected(l, rank, n, 0), gccl.Sum)
	for j := range n {
		assert.Equal(t, in.of(j, rank*10, 10), want[j*40:(j+1)*40], "block from rank %d", j)
	}
	l, err = layout.Spec{Op: perf.ReduceScatter, Type: gccl.Int32, Rank: rank, NRanks: n}.New(3 * 10 * 4)
	require.NoError(t, err)
	want, known = make([]byte, 40), make([]bool, 10)
	in.expect(want, known, expected(l, rank, n, 0), gccl.Sum)
	ref := reduce.Reference([][]byte{in.of(0, 10, 10), in.of(1, 10, 10), in.of(2, 10, 10)}, gccl.Int32, gccl.Sum, 0)
	assert.Equal(t, ref, want)
	assert.NotContains(t, known, false)
	l, _ = layout.Spec{Op: perf.Reduce, Type: gccl.Int32, Rank: rank, NRanks: n}.New(40)
	assert.Nil(t, expected(l, rank, n, 0), "a non-root of reduce has nothing to check")
}

func TestCountWrongCountsEveryBadElement(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ty := range []gccl.DataType{gccl.Float32, gccl.Int8, gccl.BFloat16, gccl.Uint64} {
		want := make([]byte, 1000*ty.Size())
		reduce.Fill(want, ty, rng)
		got := append([]byte{}, want...)
		require.Zero(t, CountWrong(got, want, ty, 4))
		bad := map[int]bool{}
		for len(bad) < 17 {
			bad[rng.IntN(1000)] = true
		}
		for i := range bad {
			got[i*ty.Size()+ty.Size()-1] ^= 0x40 // a high bit: far outside any tolerance
		}
		assert.Equal(t, int64(17), CountWrong(got, want, ty, 4), "%v", ty)
	}
	assert.Equal(t, int64(3), CountWrong(make([]byte, 12), make([]byte, 8), gccl.Int32, 2))
}

func TestStageAndVerify(t *testing.T) {
	d, err := device.NewHost(0, 0)
	require.NoError(t, err)
	ty := gccl.Float32
	l, err := layout.Spec{Op: perf.AllGather, Type: ty, Rank: 1, NRanks: 4}.New(4 * 4 * 64)
	require.NoError(t, err)
	mem, err := d.Alloc(l.MemElems * 4)
	require.NoError(t, err)
	defer d.Free(mem)
	in := Inputs{Seed: 5, Type: ty}
	c := lib.Call{Op: perf.AllGather, Type: ty, Rank: 1, NRanks: 4}
	c.Send, c.Recv = l.Place(mem, ty)
	st, err := Stage(d, mem, l, in, c)
	require.NoError(t, err)
	assert.Equal(t, in.of(1, 0, 64), device.HostBytes(c.Send, 256), "input staged")
	wrong, err := Verify(d, c.Recv, st, ty, 4, CountWrong)
	require.NoError(t, err)
	assert.Equal(t, int64(4*64), wrong, "poison never passes")
	copy(device.HostBytes(c.Recv, len(st.want)), st.want)
	wrong, err = Verify(d, c.Recv, st, ty, 4, CountWrong)
	require.NoError(t, err)
	assert.Zero(t, wrong)
	first, err := FirstWrong(d, c.Recv, st, ty, 4)
	require.NoError(t, err)
	assert.Empty(t, first)
	got := device.HostBytes(c.Recv, len(st.want))
	binary.LittleEndian.PutUint32(got[4*77:], math.Float32bits(1234.5))
	first, err = FirstWrong(d, c.Recv, st, ty, 4)
	require.NoError(t, err)
	want := math.Float32frombits(binary.LittleEndian.Uint32(st.want[4*77:]))
	assert.Equal(t, fmt.Sprintf("element 77 of float32: got 1234.5, want %v", float64(want)), first)
}

// Halo: each halo must hold the neighbour's face toward this rank. A face
// put in the wrong halo (the lower neighbour's where the upper one's
// belongs: one rank on a periodic dimension of 2) is counted.
func TestStageAndVerifyHalo(t *testing.T) {
	d, err := device.NewHost(0, 0)
	require.NoError(t, err)
	ty, count := gccl.Int32, 100
	grid := p2p.Cart{Dims: []int{2, 2}, Periodic: []bool{true, true}}
	l, err := layout.Spec{Op: perf.Halo, Type: ty, Rank: 3, NRanks: 4, Grid: grid}.New(int64(count * 4))
	require.NoError(t, err)
	mem, err := d.Alloc(l.MemElems * 4)
	require.NoError(t, err)
	defer d.Free(mem)
	in := Inputs{Seed: 9, Type: ty}
	c := lib.Call{Op: perf.Halo, Count: count, Type: ty, Rank: 3, NRanks: 4, Grid: grid}
	c.Send, c.Recv = l.Place(mem, ty)
	st, err := Stage(d, mem, l, in, c)
	require.NoError(t, err)
	wrong, err := Verify(d, c.Recv, st, ty, 4, CountWrong)
	require.NoError(t, err)
	assert.Equal(t, int64(4*count), wrong, "poison never passes")

	halo := func(i int) []byte { return device.HostBytes(c.Halos()[i].Recv, count*4) }
	for i, nb := range []int{1, 1, 2, 2} { // rank 3's neighbours, lower then upper per dimension
		copy(halo(i), in.of(nb, (i^1)*count, count))
	}
	wrong, err = Verify(d, c.Recv, st, ty, 4, CountWrong)
	require.NoError(t, err)
	assert.Zero(t, wrong, "every halo holds the neighbour's face toward this rank")

	h0 := append([]byte(nil), halo(0)...)
	copy(halo(0), halo(1))
	copy(halo(1), h0)
	wrong, err = Verify(d, c.Recv, st, ty, 4, CountWrong)
	require.NoError(t, err)
	assert.Equal(t, int64(2*count), wrong, "faces swapped between the halos of dimension 0")
}
