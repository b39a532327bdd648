//go:build !mpich

package mpi

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// haloPeers is the neighbours of rank on a grid of size×1 ranks, lower then
// upper per dimension, -1 past an edge when not periodic: along the
// second dimension (one rank) a periodic rank is its own neighbour, and
// with 2 ranks both neighbours along the first are one rank.
func haloPeers(rank, size int, periodic bool) []int {
	lo, hi, self := rank-1, rank+1, rank
	if periodic {
		lo, hi = (lo+size)%size, hi%size
	} else {
		self = -1
		if lo < 0 {
			lo = -1
		}
		if hi >= size {
			hi = -1
		}
	}
	return []int{lo, hi, self, self}
}

// Every halo holds its neighbour's face toward this rank; a face past an
// edge is left untouched.
func TestCollectivesHalo(t *testing.T) {
	c := newColl(t)
	rank, size := c.Rank(), c.Size()
	typ := gccl.Float64
	count := func(i int) int { return 1000 + 37*(i/2) } // per dimension: a face in the wrong dimension shows
	face := func(r, i int) []byte { return collInput(r, count(i), typ, uint64(10+i)) }
	for _, periodic := range []bool{true, false} {
		peers := haloPeers(rank, size, periodic)
		faces := make([]Face, len(peers))
		got := make([][]byte, len(peers))
		for i, p := range peers {
			faces[i].Peer, faces[i].Count = p, count(i)
			faces[i].Send, _ = hostBuf(t, count(i)*8, face(rank, i))
			faces[i].Recv, got[i] = hostBuf(t, count(i)*8, nil)
		}
		took, err := c.Halo(faces, typ)
		require.NoError(t, err)
		assert.Positive(t, took.Nanoseconds())
		for i, p := range peers {
			if p < 0 {
				assert.Equal(t, byte(0xA5), got[i][0], "periodic=%v halo %d past the edge was written", periodic, i)
				continue
			}
			require.Equal(t, face(p, i^1), got[i], "periodic=%v halo %d from rank %d", periodic, i, p)
		}
	}
}

func TestCollectivesHaloBadArguments(t *testing.T) {
	c := newColl(t)
	buf, _ := hostBuf(t, 64, nil)
	argOf := func(err error) string {
		var e *gccl.Error
		require.ErrorAs(t, err, &e)
		return e.Arg
	}
	ok := Face{Peer: 0, Send: buf, Recv: buf, Count: 1}
	for arg, faces := range map[string][]Face{
		"faces": {ok},
		"peer":  {ok, {Peer: c.Size(), Send: buf, Recv: buf, Count: 1}},
		"count": {{Peer: 0, Send: buf, Recv: buf, Count: -1}, ok},
		"recv":  {ok, {Peer: 0, Send: buf, Count: 1}},
	} {
		_, err := c.Halo(faces, gccl.Int8)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, arg)
		assert.Equal(t, arg, argOf(err))
	}
	_, err := c.Halo([]Face{ok, ok}, gccl.Float16)
	assert.Equal(t, "datatype", argOf(err))
	_, err = c.Halo(nil, gccl.Int8)
	require.NoError(t, err, "no faces: nothing to do")
}
