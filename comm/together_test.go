package comm

import (
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promptly runs f and fails the test unless it returns within 10 s.
func promptly(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting after 10 s", what)
		return nil
	}
}

// TestFinalizeSiblingsAlone: one goroutine finalizing InitAll's ranks one
// after the other fails at once with a typed error that says to finalize
// them together; FinalizeAll then finalizes them.
func TestFinalizeSiblingsAlone(t *testing.T) {
	comms, err := InitAllN(3)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			_ = c.Abort()
		}
	})
	err = promptly(t, "Finalize of one InitAll rank", comms[0].Finalize)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	assert.Contains(t, err.Error(), "group.Finalize")
	require.NoError(t, comms[0].Status(), "the refused Finalize leaves the rank open")

	err = promptly(t, "FinalizeAll of a subset", func() error { return FinalizeAll(comms[:2]) })
	require.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank 2 left out")
	require.NoError(t, promptly(t, "FinalizeAll", func() error { return FinalizeAll(comms) }))
	for _, c := range comms {
		require.ErrorIs(t, c.Finalize(), gccl.ErrInvalidUsage, "finalized already")
		require.NoError(t, c.Close())
	}
}

// TestInitRanksSplitAll: one goroutine creates every rank with InitRanks,
// splits them with SplitAll and finalizes both levels with FinalizeAll.
func TestInitRanksSplitAll(t *testing.T) {
	const n = 4
	id, err := NewUniqueID()
	require.NoError(t, err)
	reqs := make([]InitReq, n)
	for r := range reqs {
		reqs[r] = InitReq{NRanks: n, ID: id, Rank: r, Config: testConfig(20 * time.Second)}
	}
	comms, err := InitRanks(reqs)
	require.NoError(t, err)
	checkAllGather(t, comms)
	splits := make([]SplitReq, n)
	for r, c := range comms {
		splits[r] = SplitReq{Parent: c, Color: r % 2, Key: -r}
	}
	subs, err := SplitAll(splits)
	require.NoError(t, err)
	for r, s := range subs {
		assert.Equal(t, 2, s.Count())
		assert.Equal(t, 1-r/2, s.Rank(), "keys reverse the order")
	}
	require.ErrorIs(t, subs[0].Finalize(), gccl.ErrInvalidUsage, "a split's siblings are finalized together")
	require.NoError(t, promptly(t, "FinalizeAll", func() error { return FinalizeAll(append(subs, comms...)) }))
	for _, c := range append(subs, comms...) {
		require.NoError(t, c.Close())
	}
	_, err = SplitAll([]SplitReq{{}})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
}
