package soak

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// defaultOps is the length of a CI run (race_test.go shortens it).
var defaultOps = 400

var (
	numOps   = flag.Int("soak.ops", 0, "operations in the sequence; 0 = 400 (60 with -race); make soak: 100000")
	seedFlag = flag.Uint64("soak.seed", 0, "seed of the sequence; 0 = random (printed)")
	nranks   = flag.Int("soak.ranks", 4, "ranks")
)

const maxBatch = 4 // operations in one group, at most

// rank is one rank's communicator, stream and buffers.
type rank struct {
	c          *comm.Comm
	d          device.Device
	s          gccl.Stream
	send, recv uintptr // maxBatch slots each
}

func newRank(t *testing.T, c *comm.Comm) *rank {
	r := &rank{c: c, d: c.Device()}
	require.NotNil(t, r.d)
	var err error
	r.s, err = r.d.NewStream()
	require.NoError(t, err)
	r.send, err = r.d.Alloc(maxBatch * slotBytes)
	require.NoError(t, err)
	r.recv, err = r.d.Alloc(maxBatch * slotBytes)
	require.NoError(t, err)
	return r
}

func (r *rank) free() error {
	return firstErr(r.d.DestroyStream(r.s), r.d.Free(r.send), r.d.Free(r.recv))
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// prepare writes o's input and poison into slot j and returns the call.
// In place, the operation's one buffer lies in the recv slot.
func (r *rank) prepare(o harness.Case, j int) (harness.Call, error) {
	me, n := r.c.Rank(), r.c.Count()
	sendSlot, recvSlot := r.send+uintptr(j*slotBytes), r.recv+uintptr(j*slotBytes)
	sendBytes, recvBytes := o.Sizes(n)
	c := harness.Call{Case: o, Send: sendSlot, Recv: recvSlot, RedOp: o.Op}
	if o.InPlace {
		sendOff, recvOff := o.InPlaceOffsets(me, n)
		c.Send, c.Recv = recvSlot+uintptr(sendOff), recvSlot+uintptr(recvOff)
	}
	if err := r.d.CopyIn(recvSlot, harness.PoisonBytes(max(sendBytes, recvBytes))); err != nil {
		return c, err
	}
	in := harness.Input(o.Seed, me, o.T, sendBytes/o.T.Size())
	if len(in) == 0 {
		return c, nil
	}
	return c, r.d.CopyIn(c.Send, in)
}

// check compares the receive buffer of c with the reference.
func (r *rank) check(c harness.Call) error {
	want := c.Expected(r.c.Rank(), r.c.Count())
	if len(want) == 0 {
		return nil
	}
	got := make([]byte, len(want))
	if err := r.d.CopyOut(got, c.Recv); err != nil {
		return err
	}
	if string(got) != string(want) {
		return fmt.Errorf("rank %d: %v: %s", r.c.Rank(), c.Case, firstDiff(got, want))
	}
	return nil
}

// step runs one batch of operations and checks every result.
func (r *rank) step(batch []harness.Case, direct bool) error {
	calls := make([]harness.Call, len(batch))
	for j, o := range batch {
		var err error
		if calls[j], err = r.prepare(o, j); err != nil {
			return err
		}
	}
	var err error
	if direct {
		err = calls[0].Launch(r.c, r.s)
	} else {
		g := group.New()
		for _, c := range calls {
			c.Add(g, r.c, r.s)
		}
		err = g.End()
	}
	if err == nil {
		err = r.d.Synchronize(r.s)
	}
	if err != nil {
		return fmt.Errorf("rank %d: %v: %w", r.c.Rank(), batch, err)
	}
	for _, c := range calls {
		if err := r.check(c); err != nil {
			return err
		}
	}
	return nil
}

// sequence draws the batches every rank runs.
func sequence(seed uint64, ops, nranks int) (batches [][]harness.Case, direct []bool) {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	for drawn := 0; drawn < ops; {
		k := 1
		if rng.IntN(10) < 3 {
			k = 2 + rng.IntN(maxBatch-1)
		}
		k = min(k, ops-drawn)
		b := make([]harness.Case, k)
		for j := range b {
			b[j] = draw(rng, nranks)
		}
		batches = append(batches, b)
		direct = append(direct, k == 1 && rng.IntN(2) == 0)
		drawn += k
	}
	return batches, direct
}

func TestSoak(t *testing.T) {
	if *numOps == 0 {
		*numOps = defaultOps
	}
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("soak: %d operations on %d ranks, seed %#x (rerun with -soak.seed=%d)", *numOps, *nranks, seed, seed)
	_, err := comm.NewUniqueID() // the process's root listener lives as long as the process
	require.NoError(t, err)
	before := countResources(t)
	run(t, seed)
	settle(t, before)
}

func run(t *testing.T, seed uint64) {
	n := *nranks
	comms := makeComms(t, n)
	ranks := make([]*rank, n)
	for i, c := range comms {
		ranks[i] = newRank(t, c)
	}
	batches, direct := sequence(seed, *numOps, n)
	var once sync.Once
	var firstFailure error
	fail := func(err error) { // stop every rank at once
		once.Do(func() {
			firstFailure = err
			for _, c := range comms {
				_ = c.Abort()
			}
		})
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, r := range ranks {
		wg.Go(func() {
			for i, b := range batches {
				if err := r.step(b, direct[i]); err != nil {
					fail(fmt.Errorf("batch %d: %w", i, err))
					return
				}
				if r.c.Rank() == 0 && (i+1)%max(1, len(batches)/10) == 0 {
					t.Logf("soak: %d/%d batches after %v", i+1, len(batches), time.Since(start).Round(time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, firstFailure)
	for _, r := range ranks {
		require.NoError(t, r.c.AsyncError())
	}
	_, errs := gccltest.Parallel(n, func(i int) (struct{}, error) { return struct{}{}, comms[i].Finalize() })
	for i, err := range errs {
		require.NoError(t, err, "Finalize of rank %d", i)
	}
	for i, r := range ranks {
		require.NoError(t, r.free(), "freeing rank %d's buffers", i)
		require.NoError(t, r.c.Close(), "Close of rank %d", i)
	}
	t.Logf("soak: %d operations in %d batches verified in %v", *numOps, len(batches), time.Since(start).Round(time.Millisecond))
}
