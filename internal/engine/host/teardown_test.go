package host

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedReducer is testReducer that, once its gate is armed, holds every
// Combine after computing it until the gate opens: a rank stuck in the
// middle of an operation, its output written and its next send still to
// come from the user's buffer.
type gatedReducer struct {
	testReducer
	g *gate
}

func (r gatedReducer) Combine(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error {
	err := r.testReducer.Combine(dst, a, b, t, op)
	r.g.hold()
	return err
}

// gate holds goroutines (hold) until open; reached reports whether one
// came.
type gate struct {
	once    sync.Once
	opened  chan struct{}
	came    atomic.Bool
	holding atomic.Int32
}

func newGate() *gate { return &gate{opened: make(chan struct{})} }

func (g *gate) hold() {
	g.came.Store(true)
	g.holding.Add(1)
	defer g.holding.Add(-1)
	<-g.opened
}

func (g *gate) open() { g.once.Do(func() { close(g.opened) }) }

// TestTeardownWhileRanksRun: a test that ends while ranks still run an
// operation it never synchronised (as when a require fails) frees their
// buffers only once those operations are over; and a rank frees its own
// buffer as soon as Synchronize has returned its operation's error,
// while its peers still run. Rank 2 is held in the middle of a
// 4-channel AllReduce, rank 0 times out waiting for it and frees its
// buffer, and the subtest ends; rank 2 goes on 100 ms into the world's
// teardown. Freed memory is unmapped (device's host Alloc), so a rank
// that touched a freed buffer would crash the test binary with SIGSEGV,
// as TestChannelsStall once did when the teardown freed first.
func TestTeardownWhileRanksRun(t *testing.T) {
	const n, count = 3, 200_003
	g := newGate()
	t.Run("ends early", func(t *testing.T) {
		id := enginetest.Identity()
		w, errs := openWorld(t, n, 500*time.Millisecond, func(r int) Config {
			tc := id
			tc.HostHash = uint64(1 + r)
			var red Reducer = testReducer{}
			if r == 2 {
				red = gatedReducer{g: g}
			}
			return Config{Transport: tc, Reducer: red, ChunkBytes: 4096, Channels: 4}
		})
		// Cleanups run last-in first-out: this one, at the start of the
		// world's teardown, lets rank 2 go on 100 ms later.
		t.Cleanup(func() { time.AfterFunc(100*time.Millisecond, g.open) })
		for _, err := range errs {
			require.NoError(t, err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		bufs := make([]uintptr, n)
		for r := range n {
			bufs[r], _ = w.alloc(t, r, 4*count, rng)
			require.NoError(t, w.engines[r].Launch([]engine.Op{{Kind: algo.AllReduce, Send: bufs[r], Recv: bufs[r], Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}}))
		}
		err := w.devs[0].Synchronize(w.streams[0])
		require.ErrorIs(t, err, gccl.ErrTimeout)
		assert.Contains(t, err.Error(), "waiting for rank 2")
		w.free(t, 0, bufs[0])
		require.True(t, g.came.Load(), "rank 2 reached no Combine before rank 0 timed out")
	})
	assert.Zero(t, g.holding.Load(), "rank 2 still held after the teardown")
}
