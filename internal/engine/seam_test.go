package engine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBackend is a backend driven by the core through the exported seam
// only: Submit starts a goroutine that waits for the launch's turn, after
// a random delay (so that turns are asked for out of issue order), runs
// the ops by logging their counts, and ends the launch with what run says.
type fakeBackend struct {
	mu     sync.Mutex
	ran    []int  // Count of every op run, in the order run
	closed []bool // the abort flag of every Close
	rng    *rand.Rand

	submitErr error                                             // Submit fails with it when set
	run       func(ctx context.Context, l *engine.Launch) error // nil: succeed
	done      chan error                                        // if not nil, gets what each Done returned
}

func (f *fakeBackend) Submit(l *engine.Launch) error {
	if f.submitErr != nil {
		return f.submitErr
	}
	f.mu.Lock()
	delay := time.Duration(f.rng.IntN(2000)) * time.Microsecond
	f.mu.Unlock()
	go func() {
		time.Sleep(delay)
		ctx := l.Context()
		err := l.WaitTurn(ctx)
		if err == nil {
			f.mu.Lock()
			for _, o := range l.Ops {
				f.ran = append(f.ran, o.Count)
			}
			f.mu.Unlock()
			if f.run != nil {
				err = f.run(ctx, l)
			}
		}
		err = l.Done(err)
		if f.done != nil {
			f.done <- err
		}
	}()
	return nil
}

func (f *fakeBackend) Close(abort bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = append(f.closed, abort)
	return nil
}

func (f *fakeBackend) log() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.ran...)
}

// seamEngine is a one-rank engine on f with a host device for its ops
// (unused) buffers.
func seamEngine(t *testing.T, f engine.Backend, timeout time.Duration) (*engine.Engine, uintptr) {
	t.Helper()
	return seamEngineID(t, f, timeout, 0)
}

// seamEngineID is seamEngine with engine.Config.ID id.
func seamEngineID(t *testing.T, f engine.Backend, timeout time.Duration, id uint64) (*engine.Engine, uintptr) {
	t.Helper()
	d, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	buf, err := d.Alloc(4096) // every op of these tests fits: counts stay below 1024 int32
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Free(buf) })
	e, err := engine.New(engine.Config{Rank: 0, NRanks: 1, Boot: enginetest.NewNet(1).Rank(0), Device: d, Timeout: timeout, ID: id,
		Backend: func(_ context.Context, s engine.Setup) (engine.Backend, error) {
			assert.Equal(t, timeout, s.Timeout)
			return f, nil
		}})
	require.NoError(t, err)
	return e, buf
}

// op is an in-place all-reduce of count int32 at buf (count tells ops apart).
func op(buf uintptr, count int) engine.Op {
	return engine.Op{Kind: algo.AllReduce, Send: buf, Recv: buf, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: 1}
}

// TestSeamIssueOrder: launches whose backend asks for their turns in a
// random order run in the order they were launched, and Drain waits for
// all of them.
func TestSeamIssueOrder(t *testing.T) {
	f := &fakeBackend{rng: rand.New(rand.NewPCG(1, 2))}
	e, buf := seamEngine(t, f, 10*time.Second)
	var want []int
	for i := range 40 {
		ops := []engine.Op{op(buf, 2*i+1)}
		want = append(want, 2*i+1)
		if i%3 == 0 { // several ops in one launch keep their order
			ops = append(ops, op(buf, 2*i+2))
			want = append(want, 2*i+2)
		}
		require.NoError(t, e.Launch(ops))
	}
	require.NoError(t, e.Drain(context.Background()))
	assert.Equal(t, want, f.log())
	require.NoError(t, e.Close())
	assert.Equal(t, []bool{false}, f.closed)
}

// TestSeamErrors: a launch the backend fails becomes the engine's async
// error, which later launches and Drain return; a Submit that fails is
// returned at once and gives its turn back; nothing is submitted when an
// op is invalid.
func TestSeamErrors(t *testing.T) {
	boom := gccl.Errorf(gccl.SystemError, "test", "backend failed")
	f := &fakeBackend{rng: rand.New(rand.NewPCG(3, 4))}
	e, buf := seamEngine(t, f, 10*time.Second)

	f.submitErr = gccl.Errorf(gccl.InvalidUsage, "stream", "refused")
	require.ErrorIs(t, e.Launch([]engine.Op{op(buf, 1)}), gccl.ErrInvalidUsage)
	f.submitErr = nil
	require.NoError(t, e.Launch([]engine.Op{op(buf, 2)}))
	require.NoError(t, e.Drain(context.Background()), "the refused launch's turn was given back")

	bad := op(buf, 3)
	bad.Root, bad.Kind = 5, algo.Broadcast
	err := e.Launch([]engine.Op{op(buf, 4), bad})
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "%v", err)
	assert.Equal(t, "root", ge.Arg)

	f.run = func(context.Context, *engine.Launch) error { return boom }
	require.NoError(t, e.Launch([]engine.Op{op(buf, 5)}))
	require.ErrorIs(t, e.Drain(context.Background()), boom)
	assert.Equal(t, boom, e.AsyncError())
	assert.ErrorIs(t, e.Launch([]engine.Op{op(buf, 6)}), boom, "launches after a failure fail at once")
	assert.Equal(t, []int{2, 5}, f.log(), "the invalid launch and those after the failure never reached the backend")
}

// TestSeamAbort: Abort cancels the context of a launch in flight, whose
// error becomes the abort's cause; the backend is closed with abort, and
// the launches waiting for their turn fail at once with the cause.
func TestSeamAbort(t *testing.T) {
	started := make(chan struct{})
	f := &fakeBackend{rng: rand.New(rand.NewPCG(5, 6))}
	f.run = func(ctx context.Context, l *engine.Launch) error {
		if l.Ops[0].Count != 1 {
			return nil
		}
		close(started)
		<-ctx.Done() // a peer that never comes
		return gccl.Errorf(gccl.SystemError, "peer", "connection closed while waiting")
	}
	e, buf := seamEngine(t, f, time.Minute)
	require.NoError(t, e.Launch([]engine.Op{op(buf, 1)}))
	require.NoError(t, e.Launch([]engine.Op{op(buf, 2)}))
	<-started
	cause := gccl.Errorf(gccl.RemoteError, "peer", "rank 3 is gone")
	start := time.Now()
	require.NoError(t, e.AbortWith(cause))
	assert.Equal(t, []bool{true}, f.closed)
	err := e.Drain(context.Background())
	require.ErrorIs(t, err, cause)
	assert.Less(t, time.Since(start), 10*time.Second, "aborted, not timed out")
	assert.Equal(t, cause, e.AsyncError())
	assert.Equal(t, []int{1}, f.log(), "the launch after the aborted one did not run")
	assert.ErrorIs(t, e.Launch([]engine.Op{op(buf, 3)}), gccl.ErrInvalidUsage, "closed")
}

// TestSeamTimeoutBeforeAbort: a launch whose deadline passed before an
// Abort (the host backend names the stalled rank after the deadline, and
// a peer that timed out on the same stall may abort meanwhile, reaching
// this rank as a lost peer) keeps its timeout, which then takes the
// abort's cause's place as the async error.
func TestSeamTimeoutBeforeAbort(t *testing.T) {
	expired, aborted := make(chan struct{}), make(chan struct{})
	stall := gccl.Errorf(gccl.TimeoutError, "peer", "op #0 timed out waiting for rank 2")
	f := &fakeBackend{rng: rand.New(rand.NewPCG(9, 10)), done: make(chan error, 1)}
	f.run = func(ctx context.Context, l *engine.Launch) error {
		<-ctx.Done()
		close(expired)
		<-aborted // naming the stalled rank
		return stall
	}
	e, buf := seamEngine(t, f, 100*time.Millisecond)
	require.NoError(t, e.Launch([]engine.Op{op(buf, 1)}))
	<-expired
	cause := gccl.Errorf(gccl.RemoteError, "peer", "rank 1 is gone")
	require.NoError(t, e.AbortWith(cause))
	assert.Equal(t, cause, e.AsyncError(), "the abort's cause, until the launch ends")
	close(aborted)
	assert.Equal(t, stall, <-f.done, "the launch keeps its timeout")
	assert.Equal(t, stall, e.AsyncError(), "the launch's timeout replaces the abort's cause")
}

// TestSeamAbortCancelledWait: a wait that Abort cut short before the
// launch's deadline is replaced by the abort's cause, though transports
// report a cancelled wait as gccl.ErrTimeout.
func TestSeamAbortCancelledWait(t *testing.T) {
	started := make(chan struct{})
	f := &fakeBackend{rng: rand.New(rand.NewPCG(11, 12)), done: make(chan error, 1)}
	f.run = func(ctx context.Context, l *engine.Launch) error {
		close(started)
		<-ctx.Done()
		return gccl.Errorf(gccl.TimeoutError, "net recv", "cancelled while waiting: %w", ctx.Err())
	}
	e, buf := seamEngine(t, f, 10*time.Second)
	require.NoError(t, e.Launch([]engine.Op{op(buf, 1)}))
	<-started
	cause := gccl.Errorf(gccl.RemoteError, "peer", "rank 1 is gone")
	require.NoError(t, e.AbortWith(cause))
	assert.Equal(t, cause, <-f.done)
	assert.Equal(t, cause, e.AsyncError())
}

// TestSeamTimeout: a launch that waits longer than Config.Timeout for its
// turn fails with gccl.ErrTimeout as the async error.
func TestSeamTimeout(t *testing.T) {
	hold := make(chan struct{})
	f := &fakeBackend{rng: rand.New(rand.NewPCG(7, 8))}
	f.run = func(ctx context.Context, l *engine.Launch) error {
		if l.Ops[0].Count == 1 {
			<-hold // ignores its context: the next launch's turn never comes
		}
		return nil
	}
	e, buf := seamEngine(t, f, 100*time.Millisecond)
	require.NoError(t, e.Launch([]engine.Op{op(buf, 1)}))
	require.NoError(t, e.Launch([]engine.Op{op(buf, 2)}))
	require.Eventually(t, func() bool { return e.AsyncError() != nil }, 5*time.Second, time.Millisecond)
	assert.ErrorIs(t, e.AsyncError(), gccl.ErrTimeout)
	close(hold)
	require.NoError(t, e.Close())
}

// reportBackend is a fakeBackend that reports a failure its work left in
// memory (as the GPU kernels' status word) until it is cleared.
type reportBackend struct {
	fakeBackend
	status error
}

func (r *reportBackend) Stats() engine.Stats { return engine.Stats{ZeroCopyOps: 7} }
func (r *reportBackend) LastPath() string    { return "copy" }
func (r *reportBackend) Status() error       { return r.status }

// TestSeamReporter: the core's Stats and LastGPUPath ask a Reporter, and
// AsyncError records the failure it reports, which stays once reported.
func TestSeamReporter(t *testing.T) {
	r := &reportBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(9, 9))}}
	e, buf := seamEngine(t, r, 10*time.Second)
	assert.Equal(t, uint64(7), e.Stats().ZeroCopyOps)
	assert.Equal(t, "copy", e.LastGPUPath())
	require.NoError(t, e.AsyncError())
	r.status = gccl.Errorf(gccl.TimeoutError, "comm", "a kernel gave up")
	require.ErrorIs(t, e.AsyncError(), gccl.ErrTimeout)
	r.status = nil
	require.ErrorIs(t, e.AsyncError(), gccl.ErrTimeout, "recorded")
	require.ErrorIs(t, e.Launch([]engine.Op{op(buf, 1)}), gccl.ErrTimeout)

	plain, _ := seamEngine(t, &fakeBackend{rng: rand.New(rand.NewPCG(1, 1))}, time.Second)
	assert.Zero(t, plain.Stats())
	assert.Empty(t, plain.LastGPUPath())
}
