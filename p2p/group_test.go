package p2p_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/group"
	"github.com/stretchr/testify/require"
)

// blocks puts len(vals) blocks of count int32 on rank r of w, block k all
// vals[k], and returns the pointer and a check that the blocks still hold
// want (nil: vals).
func blocks(t *testing.T, w *colltest.World, r, count int, vals ...int32) (uintptr, func(want ...int32) error) {
	t.Helper()
	b := make([]byte, 4*count*len(vals))
	for k, v := range vals {
		for i := range count {
			binary.LittleEndian.PutUint32(b[4*(k*count+i):], uint32(v))
		}
	}
	p, err := w.Devs[r].Alloc(len(b))
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Devs[r].Free(p) })
	require.NoError(t, w.Devs[r].CopyIn(p, b))
	return p, func(want ...int32) error {
		got := make([]byte, len(b))
		if err := w.Devs[r].CopyOut(got, p); err != nil {
			return err
		}
		for i := range len(got) / 4 {
			if v := int32(binary.LittleEndian.Uint32(got[4*i:])); v != want[i/count] {
				return fmt.Errorf("rank %d element %d is %d, want %d", r, i, v, want[i/count])
			}
		}
		return nil
	}
}

// TestPatternsInGroup: every pattern has a group form, so one group per
// rank fuses AllToAll, Scatter, Gather and NeighborExchange with an
// AllReduce, and all of them complete as one launch.
func TestPatternsInGroup(t *testing.T) {
	const n, count, scatterRoot, gatherRoot = 3, 777, 1, 2
	w := colltest.New(t, n, nil)
	var checks []func() error
	for r := range n {
		s, c := w.Streams[r], w.Comms[r]
		g := group.New()

		a2aSend, _ := blocks(t, w, r, count, 100*int32(r), 100*int32(r)+1, 100*int32(r)+2)
		a2aRecv, a2a := blocks(t, w, r, count, -1, -1, -1)
		g.AllToAll(c, a2aSend, a2aRecv, count, gccl.Int32, s)
		checks = append(checks, func() error { return a2a(int32(r), 100+int32(r), 200+int32(r)) })

		scSend, _ := blocks(t, w, r, count, 1000, 1001, 1002)
		scRecv, sc := blocks(t, w, r, count, -1)
		g.Scatter(c, scSend, scRecv, count, gccl.Int32, scatterRoot, s)
		checks = append(checks, func() error { return sc(1000 + int32(r)) })

		gaSend, _ := blocks(t, w, r, count, 2000+int32(r))
		gaRecv, ga := blocks(t, w, r, count, -1, -1, -1)
		g.Gather(c, gaSend, gaRecv, count, gccl.Int32, gatherRoot, s)
		if r == gatherRoot {
			checks = append(checks, func() error { return ga(2000, 2001, 2002) })
		}

		peers := []int{(r + n - 1) % n, (r + 1) % n}
		nbSend, _ := blocks(t, w, r, count, 3000+int32(r))
		nbRecv, nb := blocks(t, w, r, count, -1, -1)
		g.NeighborExchange(c, nbSend, nbRecv, count, gccl.Int32, peers, s)
		checks = append(checks, func() error { return nb(3000+int32(peers[0]), 3000+int32(peers[1])) })

		ar, arCheck := blocks(t, w, r, count, int32(r+1))
		g.AllReduce(c, ar, ar, count, gccl.Int32, gccl.Sum, s)
		checks = append(checks, func() error { return arCheck(n * (n + 1) / 2) })
		require.NoError(t, g.End(), "rank %d", r)
	}
	w.Sync(t)
	for _, check := range checks {
		require.NoError(t, check())
	}
	// A bad vector fails End with an error naming it; nothing is launched.
	g := group.New()
	g.AllToAllv(w.Comms[0], 0, []int{1, 1}, []int{0}, 0, []int{1}, []int{0}, gccl.Int32, w.Streams[0])
	var ge *gccl.Error
	require.ErrorAs(t, g.End(), &ge)
	require.Equal(t, "sendcounts", ge.Arg)
}
