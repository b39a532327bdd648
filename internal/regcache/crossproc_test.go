package regcache

import (
	"bytes"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/internal/nettest"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asProcesses makes the goroutine ranks look like separate processes
// (distinct PIDs, and a descriptor number that means nothing here) for the
// length of the test; edit, when set, edits every rank's entry after.
func asProcesses(t *testing.T, edit func(c *Cache, e *entry)) {
	testEntryHook = func(c *Cache, e *entry) {
		e.PID = 1<<40 + int64(c.Rank())
		if e.Kind == VMM {
			e.FD = 1 << 30 // a peer that used it instead of the socket fails
		}
		if edit != nil {
			edit(c, e)
		}
	}
	t.Cleanup(func() { testEntryHook = nil })
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// vmmRanks allocates a memalloc buffer on each of n fake ranks and returns
// a random sub-buffer of each; the ranks' caches are closed, then the
// buffers freed, after the test.
func vmmRanks(t *testing.T, rng *rand.Rand, cs []*Cache) (ptrs []uintptr, lens []int) {
	ptrs, lens = make([]uintptr, len(cs)), make([]int, len(cs))
	for r, c := range cs {
		base, err := memalloc.Alloc(c.dev, 1<<20)
		require.NoError(t, err)
		t.Cleanup(func() {
			assert.NoError(t, c.Close())
			assert.NoError(t, memalloc.Free(base))
		})
		ptrs[r], lens[r] = base+uintptr(64*rng.IntN(1000)), 1000+rng.IntN(60000)
	}
	return ptrs, lens
}

// TestRegisterCollectiveAcrossProcesses: cuMem buffers of ranks in "different
// processes" are mapped through descriptors passed over the ranks'
// sockets, and every rank reads and writes every peer's memory.
func TestRegisterCollectiveAcrossProcesses(t *testing.T) {
	const n = 3
	asProcesses(t, nil)
	cs, _ := fakeRanks(t, n)
	rng := rand.New(rand.NewPCG(51, 52))
	ptrs, lens := vmmRanks(t, rng, cs)
	before := openFDs(t)
	hs, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(ptrs[r], lens[r]) })
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
		require.Len(t, hs[r].Registration().Peers, n, "rank %d mapped its peers", r)
	}
	for r := range n {
		for p := range n {
			peer := hs[r].Registration().Peers[p]
			require.Equal(t, lens[p], peer.Len)
			if p != r {
				assert.NotEqual(t, ptrs[p], peer.Ptr, "a mapping of its own on rank %d", r)
			}
			data := nettest.RandBytes(rng, lens[p])
			require.NoError(t, cs[p].dev.CopyIn(ptrs[p], data))
			got := make([]byte, lens[p])
			require.NoError(t, cs[r].dev.CopyOut(got, peer.Ptr))
			require.True(t, bytes.Equal(data, got), "rank %d reads rank %d", r, p)
			back := nettest.RandBytes(rng, lens[p])
			require.NoError(t, cs[r].dev.CopyIn(peer.Ptr, back))
			require.NoError(t, cs[p].dev.CopyOut(got, ptrs[p]))
			require.True(t, bytes.Equal(back, got), "rank %d writes rank %d", r, p)
		}
	}
	for r := range n {
		require.NoError(t, Deregister(hs[r]))
		require.NoError(t, cs[r].Close())
	}
	assert.Equal(t, before, openFDs(t), "no descriptor leaks: received ones are closed, mappings released")
}

// TestRegisterCollectiveAcrossHostsStages: ranks on different hosts keep their
// registrations without peer mappings, for cuMem and cudaMalloc memory.
func TestRegisterCollectiveAcrossHostsStages(t *testing.T) {
	const n = 3
	asProcesses(t, func(c *Cache, e *entry) { e.Host = uint64(1 + c.Rank()%2) })
	cs, _ := fakeRanks(t, n)
	rng := rand.New(rand.NewPCG(53, 54))
	ptrs, lens := vmmRanks(t, rng, cs)
	legacy := make([]uintptr, n)
	for r, c := range cs {
		p, err := c.dev.Alloc(1 << 16)
		require.NoError(t, err)
		legacy[r] = p
	}
	for _, bufs := range [][]uintptr{ptrs, legacy} {
		hs, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(bufs[r], min(lens[r], 1<<16)) })
		for r := range n {
			require.NoError(t, errs[r])
			reg := hs[r].Registration()
			require.NotNil(t, reg)
			assert.Nil(t, reg.Peers, "rank %d stages", r)
			assert.Empty(t, reg.mapped)
			require.NoError(t, Deregister(hs[r]))
		}
	}
}

// TestRegisterCollectiveUnreachableSocketStages: when a rank's descriptor cannot
// be fetched (wrong token, no such socket), every rank stages together,
// and none keeps a mapping; the next registration maps again.
func TestRegisterCollectiveUnreachableSocketStages(t *testing.T) {
	const n = 3
	cs, _ := fakeRanks(t, n)
	rng := rand.New(rand.NewPCG(55, 56))
	ptrs, lens := vmmRanks(t, rng, cs)
	for _, spoil := range []func(e *entry){
		func(e *entry) { e.Token[3] ^= 0x40 },
		func(e *entry) { e.Sock += "-gone" },
		func(e *entry) { e.Sock = "" }, // the rank could not listen
	} {
		asProcesses(t, func(c *Cache, e *entry) {
			if c.Rank() == 1 {
				spoil(e)
			}
		})
		hs, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(ptrs[r], lens[r]) })
		for r := range n {
			require.NoError(t, errs[r], "rank %d", r)
			assert.Nil(t, hs[r].Registration().Peers, "rank %d stages", r)
			assert.Empty(t, hs[r].Registration().mapped, "rank %d unmapped what it had mapped", r)
			require.NoError(t, Deregister(hs[r]))
		}
	}
	asProcesses(t, nil)
	hs, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(ptrs[r], lens[r]) })
	for r := range n {
		require.NoError(t, errs[r])
		assert.Len(t, hs[r].Registration().Peers, n)
		require.NoError(t, Deregister(hs[r]))
		require.NoError(t, cs[r].Close())
	}
}

// TestRegisterCollectiveImportFailureFailsTogether: a descriptor that arrives but
// cannot be imported fails the call on every rank with a typed error.
func TestRegisterCollectiveImportFailureFailsTogether(t *testing.T) {
	const n = 2
	cs, _ := fakeRanks(t, n)
	rng := rand.New(rand.NewPCG(57, 58))
	ptrs, lens := vmmRanks(t, rng, cs)
	asProcesses(t, func(c *Cache, e *entry) {
		if c.Rank() == 0 {
			e.Size += 1 << 20 // larger than the memory behind the descriptor
		}
	})
	_, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(ptrs[r], lens[r]) })
	for r := range n {
		require.Error(t, errs[r], "rank %d", r)
		var ge *gccl.Error
		require.ErrorAs(t, errs[r], &ge)
		assert.Contains(t, errs[r].Error(), "rank 0")
	}
	gccltest.RequireCode(t, errs[0], gccl.InvalidUsage) // rank 0 learns it from rank 1's verdict
}
