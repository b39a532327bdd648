package nettest

import (
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTCPPairsAreConnectedPairwise(t *testing.T) {
	out, in := TCPPairs(t, 3)
	require.Len(t, out, 3)
	require.Len(t, in, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range out {
		msg := RandBytes(rng, 100+i)
		_, err := out[i].Write(msg)
		require.NoError(t, err)
		got := make([]byte, len(msg))
		_, err = io.ReadFull(in[i], got)
		require.NoError(t, err)
		assert.Equal(t, msg, got, "pair %d", i)
		require.NoError(t, out[i].Close())
		require.NoError(t, in[i].Close())
	}
}

func TestRandBytesIsSeededAndSized(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 1000} {
		a := RandBytes(rand.New(rand.NewPCG(uint64(n), 5)), n)
		b := RandBytes(rand.New(rand.NewPCG(uint64(n), 5)), n)
		require.Len(t, a, n)
		assert.Equal(t, a, b)
		if n >= 8 {
			assert.NotEqual(t, a, RandBytes(rand.New(rand.NewPCG(uint64(n), 6)), n))
		}
	}
}
