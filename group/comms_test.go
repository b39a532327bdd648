package group_test

import (
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/group"
	"github.com/stretchr/testify/require"
)

// allReduceAll runs one group of in-place AllReduce over comms on their
// devices' default streams and checks the sums (rank r gives r+1).
func allReduceAll(t *testing.T, comms []*comm.Comm) {
	t.Helper()
	const count = 3000
	n := len(comms)
	bufs := make([]uintptr, n)
	g := group.New()
	for r, c := range comms {
		bufs[r] = int32s(t, c.Device(), count, int32(c.Rank()+1))
		g.AllReduce(c, bufs[r], bufs[r], count, gccl.Int32, gccl.Sum, 0)
	}
	require.NoError(t, g.End())
	for r, c := range comms {
		require.NoError(t, c.Device().Synchronize(0))
		m := c.Count()
		require.NoError(t, checkInt32s(c.Device(), bufs[r], count, int32(m*(m+1)/2)), "rank %d", r)
	}
}

// TestGroupInitSplitFinalize: the guide's one goroutine, several devices:
// group { InitRank × ndev }, collectives, group { Split × ndev } and
// group { Finalize × ndev }, with no goroutine of the caller's own.
func TestGroupInitSplitFinalize(t *testing.T) {
	const ndev = 4
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	comms := make([]*comm.Comm, ndev)
	g := group.New()
	for i := range ndev {
		g.InitRank(&comms[i], ndev, id, i, &comm.Config{Device: i, DeviceSet: true, Timeout: 20 * time.Second})
	}
	within(t, 20*time.Second, "group of InitRank", g.End)
	t.Cleanup(func() {
		for _, c := range comms {
			_ = c.Abort()
		}
	})
	for i, c := range comms {
		require.Equal(t, i, c.Rank())
		require.Equal(t, i, c.Device().Ordinal())
	}
	allReduceAll(t, comms)

	subs := make([]*comm.Comm, ndev)
	g = group.New()
	for i, c := range comms {
		g.Split(&subs[i], c, i%2, i, nil)
	}
	within(t, 20*time.Second, "group of Split", g.End)
	for _, s := range subs {
		require.Equal(t, 2, s.Count())
	}
	allReduceAll(t, subs)

	err = comms[0].Finalize()
	require.ErrorIs(t, err, gccl.ErrInvalidUsage, "a plain Finalize of one rank of a group's InitRank fails at once")
	g = group.New()
	for i := range ndev {
		g.Finalize(subs[i])
		g.Finalize(comms[i])
	}
	within(t, 20*time.Second, "group of Finalize", g.End)
	for i := range ndev {
		require.NoError(t, subs[i].Close())
		require.NoError(t, comms[i].Close())
	}
}
