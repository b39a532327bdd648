package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

// testReducer does Int32 and Float64 arithmetic for the engine's own tests
// (the full type matrix is tested with internal/reduce through package coll).
type testReducer struct{}

func (testReducer) each(dst, a, b []byte, t gccl.DataType, f func(x, y float64) float64) error {
	switch t {
	case gccl.Int32:
		for i := 0; i < len(dst); i += 4 {
			x, y := float64(int32(binary.LittleEndian.Uint32(a[i:]))), float64(int32(binary.LittleEndian.Uint32(b[i:])))
			binary.LittleEndian.PutUint32(dst[i:], uint32(int32(int64(f(x, y)))))
		}
	case gccl.Float64:
		for i := 0; i < len(dst); i += 8 {
			x, y := math.Float64frombits(binary.LittleEndian.Uint64(a[i:])), math.Float64frombits(binary.LittleEndian.Uint64(b[i:]))
			binary.LittleEndian.PutUint64(dst[i:], math.Float64bits(f(x, y)))
		}
	default:
		return fmt.Errorf("testReducer: %v unsupported", t)
	}
	return nil
}

func (r testReducer) Combine(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error {
	f := map[gccl.RedOp]func(x, y float64) float64{
		gccl.Sum: func(x, y float64) float64 { return x + y }, gccl.Prod: func(x, y float64) float64 { return x * y },
		gccl.Max: math.Max, gccl.Min: math.Min}[op]
	return r.each(dst, a, b, t, f)
}

func (r testReducer) Scale(buf []byte, t gccl.DataType, s []byte) error {
	v := make([]byte, len(buf))
	for i := 0; i < len(v); i += len(s) {
		copy(v[i:], s)
	}
	return r.each(buf, buf, v, t, func(x, y float64) float64 { return x * y })
}

func (r testReducer) DivN(buf []byte, t gccl.DataType, n int) error {
	return r.each(buf, buf, buf, t, func(x, _ float64) float64 {
		if t == gccl.Int32 {
			return float64(int64(x) / int64(n))
		}
		return x / float64(n)
	})
}

// world is n engines over an in-process bootstrap, each with its host
// device and stream, and the buffers alloc gave each rank.
type world struct {
	engines  []*engine.Engine
	backends []*Backend
	devs     []device.Device
	streams  []gccl.Stream

	mu   sync.Mutex
	bufs [][]uintptr // per rank: alloc's buffers not freed yet
}

func newWorld(t *testing.T, n int, algoList string) *world {
	t.Helper()
	return newWorldTimeout(t, n, algoList, 20*time.Second)
}

func newWorldTimeout(t *testing.T, n int, algoList string, timeout time.Duration) *world {
	t.Helper()
	algos, err := algo.ParseAllowed(algoList)
	require.NoError(t, err)
	id := enginetest.Identity()
	w, errs := openWorld(t, n, timeout, func(int) Config {
		return Config{Transport: id, Reducer: testReducer{}, Algos: algos, ChunkBytes: 4096}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	return w
}

// openWorld opens n engines at once, rank r's backend with cfg(r), and
// returns each rank's error; the world ends at the test's end (close).
func openWorld(t *testing.T, n int, timeout time.Duration, cfg func(r int) Config) (*world, []error) {
	t.Helper()
	net := enginetest.NewNet(n)
	w := &world{engines: make([]*engine.Engine, n), backends: make([]*Backend, n), devs: make([]device.Device, n), streams: make([]gccl.Stream, n),
		bufs: make([][]uintptr, n)}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		d, err := device.Open(device.Host, 0)
		require.NoError(t, err)
		s, err := d.NewStream()
		require.NoError(t, err)
		w.devs[r], w.streams[r] = d, s
		wg.Go(func() {
			cfg := cfg(r)
			w.engines[r], errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: net.Rank(r), Device: d, Timeout: timeout,
				Backend: func(ctx context.Context, s engine.Setup) (engine.Backend, error) {
					b, err := Open(ctx, s, cfg)
					if err != nil {
						return nil, err
					}
					w.backends[r] = b
					return b, nil
				}})
		})
	}
	wg.Wait()
	t.Cleanup(func() { w.close(t) })
	return w, errs
}

// close ends the world as a program must end its ranks: it closes every
// engine (each waits for its launched operations, up to its timeout, then
// closes its connections, which ends what still runs), waits for every
// rank's stream to finish, and only then frees the buffers alloc gave and
// destroys the streams. A test that stops early (a failed require) leaves
// ranks that it never synchronised running their operations: freeing
// their buffers first, as cleanups registered by alloc did, made a rank's
// sender copy from an unmapped page (TestChannelsStall, SIGSEGV in
// transport's netSend.Send). Buffers of a rank whose stream is still busy
// are left allocated.
func (w *world) close(t *testing.T) {
	var wg sync.WaitGroup
	for _, e := range w.engines {
		if e != nil {
			wg.Go(func() { assert.NoError(t, e.Close()) })
		}
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for r, d := range w.devs {
		_ = d.Synchronize(w.streams[r]) // an operation's failure is the test's to check
		if done, _ := d.Query(w.streams[r]); !done {
			t.Errorf("rank %d: its stream still runs after the engines closed; its %d buffers are left allocated", r, len(w.bufs[r]))
			w.bufs[r] = nil
		}
		for _, p := range w.bufs[r] {
			assert.NoError(t, d.Free(p), "rank %d", r)
		}
		w.bufs[r] = nil
		assert.NoError(t, d.DestroyStream(w.streams[r]))
	}
}

// alloc returns a host-device buffer of n bytes filled with random bytes;
// the world frees it when it ends (close), unless free does first.
func (w *world) alloc(t *testing.T, r, n int, rng *rand.Rand) (uintptr, []byte) {
	if n == 0 {
		return 0, nil
	}
	p, err := w.devs[r].Alloc(n)
	require.NoError(t, err)
	w.mu.Lock()
	w.bufs[r] = append(w.bufs[r], p)
	w.mu.Unlock()
	b := device.HostBytes(p, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return p, b
}

// free frees rank r's buffer p from alloc now: what a program may do once
// the operations that use it are over, even failed (Synchronize returned
// their error), whatever its peers still run.
func (w *world) free(t *testing.T, r int, p uintptr) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.bufs[r], p)
	require.GreaterOrEqual(t, i, 0, "rank %d: %#x is not a buffer of alloc's, or was freed", r, p)
	w.bufs[r] = slices.Delete(w.bufs[r], i, i+1)
	require.NoError(t, w.devs[r].Free(p))
}

// sync waits for every rank's stream.
func (w *world) sync(t *testing.T) {
	for r := range w.engines {
		require.NoError(t, w.devs[r].Synchronize(w.streams[r]), "rank %d", r)
	}
}
