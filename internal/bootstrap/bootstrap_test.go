package bootstrap

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var short = Config{Timeout: 10 * time.Second}

// initAll starts nranks goroutine ranks on one ID and returns their nets.
func initAll(t *testing.T, nranks int, init func(rank int) (*Net, error)) []*Net {
	t.Helper()
	nets := make([]*Net, nranks)
	errs := make([]error, nranks)
	var wg sync.WaitGroup
	for r := range nranks {
		wg.Go(func() { nets[r], errs[r] = init(r) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range nets {
			assert.NoError(t, n.Close())
		}
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return nets
}

func eachRank(nets []*Net, f func(n *Net) error) []error {
	errs := make([]error, len(nets))
	var wg sync.WaitGroup
	for r, n := range nets {
		wg.Go(func() { errs[r] = f(n) })
	}
	wg.Wait()
	return errs
}

func payload(seed uint64, rank, round int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(rank*1000+round)))
	b := make([]byte, r.IntN(5000))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func exercise(t *testing.T, nets []*Net) {
	seed := rand.Uint64()
	nranks := len(nets)
	errs := eachRank(nets, func(n *Net) error {
		for round := range 3 {
			all, err := n.AllGather(t.Context(), payload(seed, n.Rank(), round))
			if err != nil {
				return err
			}
			for p := range nranks {
				if want := payload(seed, p, round); string(all[p]) != string(want) {
					return fmt.Errorf("rank %d round %d: contribution of %d differs", n.Rank(), round, p)
				}
			}
		}
		// Ring of tagged messages, two tags interleaved to check matching.
		next, prev := (n.Rank()+1)%nranks, (n.Rank()+nranks-1)%nranks
		for tag := range 2 {
			if err := n.Send(t.Context(), next, 7-tag, payload(seed, n.Rank(), 10+tag)); err != nil {
				return err
			}
		}
		for tag := range 2 {
			got, err := n.Recv(t.Context(), prev, 6+tag)
			if err != nil {
				return err
			}
			if string(got) != string(payload(seed, prev, 11-tag)) {
				return fmt.Errorf("rank %d tag %d: wrong message from %d", n.Rank(), 6+tag, prev)
			}
		}
		return n.Barrier(t.Context())
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

func TestInitAllGatherSendRecv(t *testing.T) {
	for _, nranks := range []int{1, 2, 3, 4, 8} {
		t.Run(fmt.Sprint(nranks), func(t *testing.T) {
			id, err := NewRootID()
			require.NoError(t, err)
			nets := initAll(t, nranks, func(r int) (*Net, error) { return Init(t.Context(), id, nranks, r, short) })
			exercise(t, nets)
		})
	}
}

func TestInitScalable(t *testing.T) {
	for _, c := range []struct{ nranks, nids int }{{1, 1}, {4, 2}, {7, 3}, {8, 8}} {
		t.Run(fmt.Sprint(c.nranks, "/", c.nids), func(t *testing.T) {
			ids := make([]wire.RootID, c.nids)
			for i := range ids {
				var err error
				ids[i], err = NewRootID()
				require.NoError(t, err)
			}
			nets := initAll(t, c.nranks, func(r int) (*Net, error) { return InitScalable(t.Context(), ids, c.nranks, r, short) })
			exercise(t, nets)
		})
	}
	id, _ := NewRootID()
	_, err := InitScalable(t.Context(), []wire.RootID{id, id, id}, 2, 0, short)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

func TestSliceOfCoversAllRanks(t *testing.T) {
	for n := 1; n < 40; n++ {
		for k := 1; k <= n; k++ {
			count := make([]int, k)
			for r := range n {
				j, lo, hi := sliceOf(n, k, r)
				require.True(t, lo <= r && r < hi && hi > lo, "n=%d k=%d r=%d", n, k, r)
				count[j]++
			}
			for j := range k {
				assert.Positive(t, count[j])
			}
		}
	}
}

func TestBadArguments(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	for _, c := range []struct{ nranks, rank int }{{0, 0}, {-1, 0}, {2, 2}, {2, -1}} {
		_, err := Init(t.Context(), id, c.nranks, c.rank, short)
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "%+v", c)
	}
	nets := initAll(t, 2, func(r int) (*Net, error) { return Init(t.Context(), id, 2, r, short) })
	assert.ErrorIs(t, nets[0].Send(t.Context(), 2, 0, nil), gccl.ErrInvalidArgument)
	_, err = nets[0].Recv(t.Context(), -1, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.ErrorIs(t, nets[0].Send(t.Context(), 1, 0, make([]byte, MaxMessage+1)), gccl.ErrInvalidArgument)
}

func TestDuplicateRankFailsBoth(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, rank := range []int{0, 1, 1} {
		wg.Go(func() {
			n, err := Init(t.Context(), id, 3, rank, short)
			errs[i] = err
			_ = n.Close()
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "caller %d", i)
	}
	assert.Contains(t, errs[1].Error()+errs[2].Error(), "rank 1 joined twice")
}

func TestWrongSecretRejected(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	bad := id
	bad.Secret[3] ^= 0x10
	var logs gccltest.SyncBuffer
	old := env.SetOutput(&logs)
	_, err = Init(t.Context(), bad, 1, 0, short)
	env.SetOutput(old)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "secret")
	assert.Contains(t, logs.String(), "wrong secret", "the root logs the rejection")
	foreign := id
	foreign.Key[0] ^= 1
	_, err = Init(t.Context(), foreign, 1, 0, short)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	// The genuine ID still works: the bad attempts were never admitted.
	n, err := Init(t.Context(), id, 1, 0, short)
	require.NoError(t, err)
	require.NoError(t, n.Close())
}

func TestIDUsedOnce(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	n, err := Init(t.Context(), id, 1, 0, short)
	require.NoError(t, err)
	defer n.Close()
	_, err = Init(t.Context(), id, 1, 0, short)
	assert.ErrorIs(t, err, gccl.ErrInvalidUsage)
}

func TestMissingRankTimesOut(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	cfg := Config{Timeout: 1500 * time.Millisecond}
	start := time.Now()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for _, r := range []int{0, 2} {
		wg.Go(func() { _, errs[r/2] = Init(context.Background(), id, 4, r, cfg) })
	}
	wg.Wait()
	assert.Less(t, time.Since(start), 3*time.Second)
	for _, err := range errs {
		require.ErrorIs(t, err, gccl.ErrTimeout)
		assert.Contains(t, err.Error(), "[1 3]")
	}
}

func TestAbortWakesWaiters(t *testing.T) {
	const nranks = 4
	id, err := NewRootID()
	require.NoError(t, err)
	nets := initAll(t, nranks, func(r int) (*Net, error) { return Init(t.Context(), id, nranks, r, short) })
	errs := make([]error, nranks)
	var wg sync.WaitGroup
	for r := 1; r < nranks; r++ {
		wg.Go(func() { errs[r] = nets[r].Barrier(t.Context()) })
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, nets[0].Abort())
	wg.Wait()
	assert.Less(t, time.Since(start), 2*time.Second)
	for r := 1; r < nranks; r++ {
		assert.ErrorIs(t, errs[r], gccl.ErrRemote, "rank %d", r)
	}
	assert.ErrorIs(t, nets[0].Barrier(t.Context()), gccl.ErrInvalidUsage, "use after abort")
	assert.NoError(t, nets[0].Close(), "close after abort")
	var nilNet *Net
	assert.NoError(t, nilNet.Close())
}

func TestRecvDeadline(t *testing.T) {
	id, err := NewRootID()
	require.NoError(t, err)
	nets := initAll(t, 2, func(r int) (*Net, error) { return Init(t.Context(), id, 2, r, short) })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = nets[0].Recv(ctx, 1, 5)
	assert.ErrorIs(t, err, gccl.ErrTimeout)
	// A message sent before the peer closed is still delivered, then ErrRemote.
	require.NoError(t, nets[1].Send(t.Context(), 0, 5, []byte("last words")))
	require.NoError(t, nets[1].Close())
	got, err := nets[0].Recv(t.Context(), 1, 5)
	require.NoError(t, err)
	assert.Equal(t, "last words", string(got))
	_, err = nets[0].Recv(t.Context(), 1, 5)
	assert.ErrorIs(t, err, gccl.ErrRemote)
}
