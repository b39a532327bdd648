package mpiboot

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/device"
)

// checkSubComm checks that c holds exactly the world ranks in members, in
// that order: ranks, size, local ranks (one host) and a gccl AllReduce of
// the world ranks over a communicator made from c.
func checkSubComm(t *testing.T, c *Comm, members []int) {
	t.Helper()
	rank, _ := World()
	require.Equal(t, len(members), c.Size())
	require.Equal(t, rank, members[c.Rank()])
	assert.Equal(t, c.Rank(), c.LocalRank(), "every process runs on this host")
	assert.Equal(t, c.Size(), c.LocalSize())

	g, err := c.NewComm(hostConfig())
	require.NoError(t, err)
	defer g.Close()
	require.Equal(t, c.Size(), g.Count())
	require.Equal(t, c.Rank(), g.Rank())
	assert.Equal(t, c.LocalRank(), g.Device().Ordinal())
	d := g.Device()
	s, err := d.NewStream()
	require.NoError(t, err)
	defer d.DestroyStream(s)
	buf, err := d.Alloc(8)
	require.NoError(t, err)
	defer d.Free(buf)
	binary.LittleEndian.PutUint64(device.HostBytes(buf, 8), uint64(rank+1))
	require.NoError(t, coll.AllReduce(g, buf, buf, 1, gccl.Uint64, gccl.Sum, s))
	require.NoError(t, d.Synchronize(s))
	want := uint64(0)
	for _, m := range members {
		want += uint64(m + 1)
	}
	assert.Equal(t, want, binary.LittleEndian.Uint64(device.HostBytes(buf, 8)))
	require.NoError(t, g.Finalize())
}

// members lists the world ranks r with keep(r), ordered by key(r) then r.
func members(size int, keep func(int) bool, key func(int) int) []int {
	var out []int
	for r := range size {
		if keep(r) {
			out = append(out, r)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: stable, by key
		for j := i; j > 0 && key(out[j]) < key(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestSplitWorldReversed(t *testing.T) {
	rank, size := World()
	c, err := SplitWorld(rank%2, -rank)
	require.NoError(t, err)
	defer c.Free()
	checkSubComm(t, c, members(size, func(r int) bool { return r%2 == rank%2 }, func(r int) int { return -r }))

	// Communicators made from the split one by its Fortran and C handles.
	for name, dup := range map[string]func() (*Comm, error){
		"fortran": func() (*Comm, error) { return FromFortran(c.Fortran()) },
		"handle":  func() (*Comm, error) { return FromHandle(c.Handle()) },
	} {
		t.Run(name, func(t *testing.T) {
			d, err := dup()
			require.NoError(t, err)
			assert.Equal(t, c.Rank(), d.Rank())
			checkSubComm(t, d, members(size, func(r int) bool { return r%2 == rank%2 }, func(r int) int { return -r }))
			require.NoError(t, d.Free())
			require.NoError(t, d.Free())
			require.ErrorIs(t, d.Barrier(), gccl.ErrInvalidUsage)
		})
	}
}

func TestSplitWorldNoColor(t *testing.T) {
	rank, size := World()
	color := 0
	if rank == 0 {
		color = -1
	}
	c, err := SplitWorld(color, 0)
	require.NoError(t, err)
	if rank == 0 {
		assert.Nil(t, c)
		return
	}
	defer c.Free()
	checkSubComm(t, c, members(size, func(r int) bool { return r != 0 }, func(int) int { return 0 }))
}

// TestSplitApp splits by MPI_APPNUM: run plainly, every process has the same
// number; run as an MPMD job (mpirun -np 2 x : -np 1 x), each command apart.
func TestSplitApp(t *testing.T) {
	_, size := World()
	app, _, err := Appnum()
	require.NoError(t, err)
	all, err := Allgather(binary.LittleEndian.AppendUint32(nil, uint32(app)))
	require.NoError(t, err)
	appOf := func(r int) int { return int(binary.LittleEndian.Uint32(all[4*r:])) }
	c, err := SplitApp()
	require.NoError(t, err)
	defer c.Free()
	t.Logf("MPI_APPNUM %d: rank %d of %d in its command", app, c.Rank(), c.Size())
	checkSubComm(t, c, members(size, func(r int) bool { return appOf(r) == app }, func(int) int { return 0 }))
}

func TestFromBadHandles(t *testing.T) {
	_, err := FromHandle(0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	var nilComm *Comm
	require.NoError(t, nilComm.Free())
	require.ErrorIs(t, nilComm.Barrier(), gccl.ErrInvalidArgument)
	w, err := world()
	require.NoError(t, err)
	require.NoError(t, w.Free(), "the world communicator is Finalize's to free")
	require.NoError(t, w.Barrier())
}
