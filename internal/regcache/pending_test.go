package regcache

import (
	"github.com/gccl/gccl/internal/memalloc"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testDone is a Completion the test finishes by hand; it counts polls
// and drops.
type testDone struct {
	done         atomic.Bool
	polls, drops atomic.Int32
}

func (d *testDone) Done() bool { d.polls.Add(1); return d.done.Load() }
func (d *testDone) Drop()      { d.drops.Add(1) }

func registered(t *testing.T, size int) (*Cache, *Handle) {
	c := hostComm(t)
	p, err := memalloc.Alloc(c.dev, size)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, c.Close()) // before the memory goes: a test may leave it in use
		assert.NoError(t, memalloc.Free(p))
	})
	h, err := c.Register(p, size)
	require.NoError(t, err)
	return c, h
}

// TestAcquireUntilHoldsUntilDone: a pending hold makes deregistration
// gccl.ErrInvalidUsage until its completion reports done; then
// Deregister succeeds with no other call and the hold is dropped once.
func TestAcquireUntilHoldsUntilDone(t *testing.T) {
	_, h := registered(t, 1<<16)
	r := h.Registration()
	d := &testDone{}
	held, err := r.AcquireUntil(7, d)
	require.NoError(t, err)
	require.True(t, held)
	assert.Equal(t, 1, r.Uses())
	err = Deregister(h)
	require.Error(t, err)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "%v", err)
	assert.Positive(t, d.polls.Load(), "Deregister polls the pending hold")
	assert.Zero(t, d.drops.Load())

	d.done.Store(true)
	require.NoError(t, Deregister(h))
	assert.Equal(t, int32(1), d.drops.Load())
	assert.Zero(t, r.Uses())
	_, err = r.AcquireUntil(7, &testDone{})
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "acquiring a released registration: %v", err)
	_, err = r.AcquireUntil(7, nil)
	assert.Equal(t, gccl.InvalidArgument, gccl.Code(err))
}

// TestAcquireUntilOrderAndBound: holds of one order key replace each other
// (the older is dropped), holds of different keys add up to maxPending,
// past which AcquireUntil declines unless some are done; the plain
// Acquire still works alongside.
func TestAcquireUntilOrderAndBound(t *testing.T) {
	_, h := registered(t, 1<<16)
	r := h.Registration()
	rng := rand.New(rand.NewPCG(3, 4))
	var same []*testDone
	for range 5 + rng.IntN(10) {
		d := &testDone{}
		held, err := r.AcquireUntil(1, d)
		require.NoError(t, err)
		require.True(t, held)
		same = append(same, d)
	}
	assert.Equal(t, 1, r.Uses(), "one stream's holds collapse into its latest")
	for i, d := range same {
		want := int32(1)
		if i == len(same)-1 {
			want = 0
		}
		assert.Equal(t, want, d.drops.Load(), "hold %d of key 1", i)
	}
	others := make([]*testDone, maxPending-1)
	for i := range others {
		others[i] = &testDone{}
		held, err := r.AcquireUntil(uint64(100+i), others[i])
		require.NoError(t, err)
		require.True(t, held)
	}
	over := &testDone{}
	held, err := r.AcquireUntil(99, over)
	require.NoError(t, err)
	assert.False(t, held, "past maxPending holds that are not done")
	assert.Zero(t, over.drops.Load(), "a declined hold is not dropped")
	assert.Equal(t, maxPending, r.Uses())
	// Unordered holds (key 0) never replace each other; finishing some
	// makes room.
	k := 1 + rng.IntN(len(others)-1)
	for _, d := range others[:k] {
		d.done.Store(true)
	}
	for range k {
		held, err := r.AcquireUntil(0, &testDone{})
		require.NoError(t, err)
		require.True(t, held)
	}
	assert.Equal(t, maxPending, r.Uses())
	for _, d := range others[:k] {
		assert.Equal(t, int32(1), d.drops.Load())
	}
	release, err := r.Acquire()
	require.NoError(t, err)
	assert.Equal(t, maxPending+1, r.Uses())
	release()
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(Deregister(h)))
}

// TestCloseDropsPending: destroying the communicator drops every
// pending hold without waiting for it.
func TestCloseDropsPending(t *testing.T) {
	c, h := registered(t, 1<<16)
	r := h.Registration()
	ds := []*testDone{{}, {}, {}}
	for i, d := range ds {
		held, err := r.AcquireUntil(uint64(i+1), d)
		require.NoError(t, err)
		require.True(t, held)
	}
	require.NoError(t, c.Close())
	for i, d := range ds {
		assert.Equal(t, int32(1), d.drops.Load(), "hold %d", i)
	}
	assert.Zero(t, r.Uses())
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(Deregister(h)))
}

// TestPendingConcurrent: goroutines adding, finishing and polling holds
// while others deregister; every hold is dropped exactly once and the
// registration ends up free.
func TestPendingConcurrent(t *testing.T) {
	_, h := registered(t, 1<<16)
	r := h.Registration()
	var mu sync.Mutex
	var all []*testDone
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 200 {
				d := &testDone{}
				held, err := r.AcquireUntil(uint64(rng.IntN(6)), d)
				if err != nil || !held {
					continue
				}
				mu.Lock()
				all = append(all, d)
				mu.Unlock()
				if rng.IntN(2) == 0 {
					d.done.Store(true)
				}
				_ = r.Uses()
			}
		})
	}
	wg.Wait()
	for _, d := range all {
		d.done.Store(true)
	}
	require.NoError(t, Deregister(h))
	for i, d := range all {
		require.Equal(t, int32(1), d.drops.Load(), "hold %d", i)
	}
}
