package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func initN(t *testing.T, nranks int) []*Net {
	id, err := NewRootID()
	require.NoError(t, err)
	return initAll(t, nranks, func(r int) (*Net, error) { return Init(t.Context(), id, nranks, r, short) })
}

// conns counts the connections that ranks dialled (each connection once).
func conns(nets []*Net) (total int, linked [][2]int) {
	for _, n := range nets {
		n.mu.Lock()
		for p, l := range n.links {
			if l.out != nil {
				total++
				linked = append(linked, [2]int{n.rank, p})
			}
		}
		n.mu.Unlock()
	}
	return total, linked
}

// TestConnectionsOnDemand: Init connects the ring only; a collective adds
// the binomial tree's edges that are not ring edges; a Send connects just
// its pair.
func TestConnectionsOnDemand(t *testing.T) {
	for _, nranks := range []int{2, 3, 13, 16} {
		t.Run(fmt.Sprint(nranks), func(t *testing.T) {
			nets := initN(t, nranks)
			ring := nranks
			if nranks == 2 {
				ring = 1
			}
			total, linked := conns(nets)
			require.Equal(t, ring, total, "after init: %v", linked)
			exercise(t, nets) // all-gathers, barriers, a ring of sends
			total, linked = conns(nets)
			assert.LessOrEqual(t, total, ring+nranks/2, "after the collectives: %v", linked)
			if nranks < 13 {
				return
			}
			require.NoError(t, nets[3].Send(t.Context(), 11, 1, []byte("far")))
			got, err := nets[11].Recv(t.Context(), 3, 1)
			require.NoError(t, err)
			assert.Equal(t, "far", string(got))
			after, _ := conns(nets)
			assert.Equal(t, total+1, after, "one Send between two unconnected ranks makes one connection")
		})
	}
}

// TestLossReachesEveryRank: a rank that aborts is reported lost on every
// other rank, whether it was connected to them or not, and collectives
// among the survivors fail with ErrRemote naming it, promptly.
func TestLossReachesEveryRank(t *testing.T) {
	for _, dead := range [][]int{{5}, {3, 9}, {7, 8}} {
		t.Run(fmt.Sprint(dead), func(t *testing.T) {
			const nranks = 16
			nets := initN(t, nranks)
			isDead := map[int]bool{}
			for _, r := range dead {
				isDead[r] = true
				require.NoError(t, nets[r].Abort())
			}
			for r, n := range nets {
				if isDead[r] {
					continue
				}
				select {
				case <-n.Lost():
				case <-time.After(3 * time.Second):
					t.Fatalf("rank %d did not hear of the loss of %v", r, dead)
				}
				err := n.LostErr()
				require.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
				named := false
				for _, d := range dead {
					named = named || bytes.Contains([]byte(err.Error()), []byte(fmt.Sprintf("rank %d ", d)))
				}
				assert.True(t, named, "rank %d: %v does not name a lost rank", r, err)
			}
			errs := make([]error, nranks)
			var wg sync.WaitGroup
			start := time.Now()
			for r, n := range nets {
				if !isDead[r] {
					wg.Go(func() { errs[r] = n.Barrier(t.Context()) })
				}
			}
			wg.Wait()
			assert.Less(t, time.Since(start), 2*time.Second)
			for r, err := range errs {
				if !isDead[r] {
					assert.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
				}
			}
		})
	}
}

// TestAllGatherLarge: contributions whose sum exceeds one message travel
// as several messages.
func TestAllGatherLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 4 × 3 × 5 MiB")
	}
	const nranks = 4
	nets := initN(t, nranks)
	size := wire.MaxPayload/3 - 1000 // a subtree of two, or the rest of three, spans several messages
	contribution := func(r int) []byte { return bytes.Repeat([]byte{byte(r + 1)}, size+r) }
	errs := eachRank(nets, func(n *Net) error {
		all, err := n.AllGather(t.Context(), contribution(n.Rank()))
		if err != nil {
			return err
		}
		for p, b := range all {
			if !bytes.Equal(b, contribution(p)) {
				return fmt.Errorf("rank %d: contribution of %d differs", n.Rank(), p)
			}
		}
		return nil
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

// TestCollectiveTimeoutNamesMissing: a rank that never enters a collective
// makes the others time out with an error that names it.
func TestCollectiveTimeoutNamesMissing(t *testing.T) {
	const nranks = 4
	nets := initN(t, nranks)
	errs := make([]error, nranks)
	var wg sync.WaitGroup
	for r, n := range nets {
		if r != 2 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
				defer cancel()
				_, errs[r] = n.AllGather(ctx, []byte{byte(r)})
			})
		}
	}
	wg.Wait()
	for r, err := range errs {
		if r == 2 {
			continue
		}
		require.ErrorIs(t, err, gccl.ErrTimeout, "rank %d", r)
		assert.Regexp(t, `not yet heard from ranks \[.*2`, err.Error(), "rank %d", r)
	}
}

func TestRankList(t *testing.T) {
	assert.Equal(t, "[]", rankList(nil))
	assert.Equal(t, "[1 3-5 9 11-12]", rankList([]int{1, 3, 4, 5, 9, 11, 12}))
}

// TestShortDeadlineDialIsNotALoss: a Send whose deadline ends while its
// connection is being made must not leave the handshake half done (the
// peer would take the closed connection for this rank's loss): the dial
// goes on in the background and later messages use it.
func TestShortDeadlineDialIsNotALoss(t *testing.T) {
	const nranks = 16
	nets := initN(t, nranks)
	for i, p := range []int{4, 6, 8, 10, 12} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(10<<i)*time.Microsecond)
		err := nets[0].Send(ctx, p, 3, []byte("early"))
		cancel()
		if err != nil {
			require.ErrorIs(t, err, gccl.ErrTimeout, "peer %d", p)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for r, n := range nets {
		require.NoError(t, n.LostErr(), "rank %d", r)
	}
	for _, p := range []int{4, 6, 8, 10, 12} {
		require.NoError(t, nets[0].Send(t.Context(), p, 4, []byte("late")))
		got, err := nets[p].Recv(t.Context(), 0, 4)
		require.NoError(t, err)
		assert.Equal(t, "late", string(got))
	}
}

// TestLeaverAfterCollectiveFailsNoOne: a rank that aborts (no goodbye) as
// soon as its all-gather returned must not fail the others' all-gathers,
// which can still complete from what it already sent (the MPI tier's
// TestAbortIsPromptAndFinal: one process aborted while the others were
// still in init's last collective). Every survivor hears of the loss.
func TestLeaverAfterCollectiveFailsNoOne(t *testing.T) {
	const nranks = 8
	for round := range 10 {
		nets := initN(t, nranks)
		leaver := 1 + round%(nranks-1) // rank 0, the tree's root, finishes first
		errs := eachRank(nets, func(n *Net) error {
			_, err := n.AllGather(t.Context(), []byte{byte(n.Rank())})
			if n.Rank() == leaver {
				_ = n.Abort()
			}
			return err
		})
		for r, err := range errs {
			require.NoError(t, err, "round %d (rank %d left): rank %d", round, leaver, r)
		}
		for r, n := range nets {
			if r == leaver {
				continue
			}
			select {
			case <-n.Lost():
			case <-time.After(3 * time.Second):
				t.Fatalf("rank %d did not hear of the loss of %d", r, leaver)
			}
		}
	}
}

// TestAbandonedCollectiveFailsPromptly: a rank whose part of a collective
// fails on a lost child tells the ranks waiting for it, whom no loss of
// theirs would wake: every survivor fails with ErrRemote at once.
func TestAbandonedCollectiveFailsPromptly(t *testing.T) {
	const nranks = 8
	nets := initN(t, nranks)
	require.NoError(t, nets[5].Abort()) // 4's child; 4's subtree is 4-7
	for r, n := range nets {
		if r == 5 {
			continue
		}
		select {
		case <-n.Lost():
		case <-time.After(3 * time.Second):
			t.Fatalf("rank %d did not hear of the loss", r)
		}
	}
	start := time.Now()
	errs := eachRank(nets, func(n *Net) error {
		if n.Rank() == 5 {
			return nil
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, err := n.AllGather(ctx, []byte{1})
		return err
	})
	assert.Less(t, time.Since(start), 3*time.Second)
	for r, err := range errs {
		if r != 5 {
			assert.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
		}
	}
}

// TestInitMissingRingPeerTimesOut: a rank that joins the rendezvous but
// never makes or takes its ring connections (stuck, or its listener never
// answers) fails its neighbours' Init within their timeout with a
// TimeoutError naming it, instead of hanging.
func TestInitMissingRingPeerTimesOut(t *testing.T) {
	const nranks, stuck = 3, 2
	id, err := NewRootID()
	require.NoError(t, err)
	ln, err := listen() // accepts into the backlog; no one answers
	require.NoError(t, err)
	defer ln.Close()
	cfg := Config{Timeout: time.Second}
	errs := make([]error, nranks)
	var wg sync.WaitGroup
	start := time.Now()
	for r := range nranks {
		wg.Go(func() {
			if r == stuck {
				ctx, cancel := context.WithTimeout(t.Context(), cfg.Timeout)
				defer cancel()
				_, errs[r] = rendezvousScalable(ctx, []wire.RootID{id}, nranks, r, ln.Addr().String())
				return
			}
			n, err := Init(t.Context(), id, nranks, r, cfg)
			if err == nil {
				_ = n.Close()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	assert.Less(t, time.Since(start), 3*time.Second)
	require.NoError(t, errs[stuck])
	for r, err := range errs {
		if r != stuck {
			require.ErrorIs(t, err, gccl.ErrTimeout, "rank %d", r)
			assert.Contains(t, err.Error(), fmt.Sprintf("rank %d", stuck), "rank %d", r)
		}
	}
}
