package gpu

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSMShare: half of the free SMs over the ranks, within GridMax, at
// least one block per rank while there is an SM per rank.
func TestSMShare(t *testing.T) {
	for _, c := range []struct{ free, ranks, want int }{
		{132, 2, 33}, {132, 4, 16}, {132, 1, 64}, {68, 2, 17}, {34, 4, 4}, {7, 4, 1}, {4, 4, 1}, {3, 4, 0}, {0, 2, 0}, {132, 0, 0},
	} {
		assert.Equal(t, c.want, smShare(c.free, c.ranks), "free %d ranks %d", c.free, c.ranks)
	}
}

// TestSMReserve: communicators on one GPU hold their shares until their
// last local rank releases; a settled share gives the difference back; a
// GPU with fewer free SMs than a communicator's ranks refuses it with
// ErrInvalidUsage; another GPU is counted apart.
func TestSMReserve(t *testing.T) {
	const gpu = 77 // an ordinal no other test uses
	a, b, c := smKey{gpu, "a"}, smKey{gpu, "b"}, smKey{gpu + 1, "a"}
	s, err := smReserve(a, 2, 132)
	require.NoError(t, err)
	assert.Equal(t, 33, s)
	s, err = smReserve(a, 2, 132) // the second local rank joins
	require.NoError(t, err)
	assert.Equal(t, 33, s)
	smSettle(a, 20) // a rank elsewhere could take fewer
	s, err = smReserve(b, 4, 132)
	require.NoError(t, err)
	assert.Equal(t, (132-40)/8, s)
	s, err = smReserve(c, 4, 132)
	require.NoError(t, err)
	assert.Equal(t, 16, s)
	for range 6 { // one rank of a communicator, then five more of it: one entry
		_, _ = smReserve(smKey{gpu, "filler"}, 1, 132)
	}
	smTable.Lock()
	used := smTable.used[gpu]
	smTable.Unlock()
	_, err = smReserve(smKey{gpu, "late"}, 132-used+1, 132)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	assert.Contains(t, err.Error(), "one process per rank")
	smRelease(a)
	smTable.Lock()
	assert.Equal(t, used, smTable.used[gpu], "one of a's two ranks still holds its share")
	smTable.Unlock()
	smRelease(a)
	smRelease(b)
	for range 6 {
		smRelease(smKey{gpu, "filler"})
	}
	smRelease(c)
	smTable.Lock()
	assert.Equal(t, 0, smTable.used[gpu], "everything given back")
	assert.Equal(t, 0, smTable.used[gpu+1])
	smTable.Unlock()
}

// TestLocalKey: the ranks of one process on one GPU, keyed by their
// buffers in any order.
func TestLocalKey(t *testing.T) {
	o := func(pid int64, ordinal int32, ptr uintptr) peermem.Offer {
		return peermem.Offer{HostHash: 1, PID: pid, Ordinal: ordinal, Ptr: ptr}
	}
	offers := []peermem.Offer{o(10, 0, 0x300), o(10, 1, 0x100), o(10, 0, 0x200), o(11, 0, 0x100)}
	k0, n0 := localKey(offers, 0)
	k2, n2 := localKey(offers, 2)
	assert.Equal(t, 2, n2)
	assert.Equal(t, 2, n0)
	assert.Equal(t, k0, k2)
	k1, n1 := localKey(offers, 1)
	assert.Equal(t, 1, n1)
	assert.NotEqual(t, k0, k1)
}
