package gpunet

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// world is n ranks on fake GPUs (one fake driver each: a process of its
// own), connected by the socket provider on loopback, each with a stream.
// Ranks on one host (the host hashes their transport reports) connect
// directly (direct.go), the others over the network.
type world struct {
	n       int
	fakes   []*cudafake.Fake
	devs    []*device.CUDADevice
	streams []gccl.Stream
	engines []*engine.Engine
	backs   []*Backend
	boots   []engine.Bootstrap // each engine's
}

// fakeBases numbers the fake drivers of the test binary: each gets
// addresses of its own (above any host address), as the ranks of one
// process share one address space, which process-wide tables keyed by
// address (memalloc's) rely on, whichever worlds are alive at once.
var fakeBases atomic.Uint64

// newWorld opens n ranks, each on a host of its own (every connection
// over the network), with FIFOs of buff bytes and ch channels.
func newWorld(t testing.TB, n, buff, ch int, timeout time.Duration) *world {
	t.Helper()
	return newWorldOn(t, hostsOf(n, 1), buff, ch, timeout, nil)
}

// hostsOf is n ranks in blocks of per consecutive ranks a host (mpirun's
// block mapping).
func hostsOf(n, per int) []int {
	hosts := make([]int, n)
	for r := range hosts {
		hosts[r] = r / per
	}
	return hosts
}

// newWorldOn opens a rank on host hosts[r] for every r, closed after the
// test; p2pOff[r] (nil: none) sets rank r's Config.P2PDisable.
func newWorldOn(t testing.TB, hosts []int, buff, ch int, timeout time.Duration, p2pOff []bool) *world {
	t.Helper()
	w, errs := openWorld(t, hosts, buff, ch, timeout, p2pOff)
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
	if t.Failed() {
		t.FailNow()
	}
	return w
}

// openWorld is newWorldOn that returns each rank's Open error.
func openWorld(t testing.TB, hosts []int, buff, ch int, timeout time.Duration, p2pOff []bool) (*world, []error) {
	t.Helper()
	return openWorldLog(t, hosts, buff, ch, timeout, p2pOff, nil)
}

// openWorldLog is openWorld with the engines logging to log (nil:
// slog.Default()).
func openWorldLog(t testing.TB, hosts []int, buff, ch int, timeout time.Duration, p2pOff []bool, log *slog.Logger) (*world, []error) {
	t.Helper()
	n := len(hosts)
	w := &world{n: n, fakes: make([]*cudafake.Fake, n), devs: make([]*device.CUDADevice, n), streams: make([]gccl.Stream, n),
		engines: make([]*engine.Engine, n), backs: make([]*Backend, n), boots: make([]engine.Bootstrap, n)}
	for r := range n {
		w.fakes[r] = cudafake.New(cudafake.Config{VABase: uintptr(32+fakeBases.Add(1)) << 48})
		registerTwins(w.fakes[r])
		dv, err := devlink.OpenGPU(w.fakes[r], 0, 2*timeout)
		require.NoError(t, err)
		w.devs[r] = dv.(*device.CUDADevice)
		t.Cleanup(func() { assert.NoError(t, w.devs[r].Close()) })
		w.streams[r], err = w.devs[r].NewStream()
		require.NoError(t, err)
	}
	var id, secret [16]byte
	_, _ = rand.Read(id[:])
	_, _ = rand.Read(secret[:])
	net := enginetest.NewNet(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			cfg := Config{Transport: transport.Config{CommID: id, Secret: secret, NetName: "socket", IfName: "lo", ShmDisable: true, HostHash: uint64(hosts[r]) + 1},
				BuffSize: buff, Channels: ch, P2PDisable: p2pOff != nil && p2pOff[r]}
			open := func(ctx context.Context, s engine.Setup) (engine.Backend, error) {
				b, err := Open(ctx, s, cfg)
				w.backs[r] = b
				return orNil(b, err)
			}
			w.boots[r] = net.Rank(r)
			w.engines[r], errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: w.boots[r], Device: w.devs[r], Timeout: timeout, Backend: open, Log: log})
		})
	}
	wg.Wait()
	t.Cleanup(func() { // one after the other: a Close never waits for a peer's
		for _, e := range w.engines {
			if e != nil {
				assert.NoError(t, e.Close())
			}
		}
	})
	return w, errs
}

// closeAll closes every rank's engine at once, rank r after delay(r) (nil:
// none), and returns each Close's error.
func (w *world) closeAll(delay func(r int) time.Duration) []error {
	errs := make([]error, w.n)
	var wg sync.WaitGroup
	for r, e := range w.engines {
		if e == nil {
			continue
		}
		wg.Go(func() {
			if delay != nil {
				time.Sleep(delay(r))
			}
			errs[r] = e.Close()
		})
	}
	wg.Wait()
	return errs
}

// orNil is b as an engine.Backend, nil on an error.
func orNil(b *Backend, err error) (engine.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// buf is a device buffer of rank r holding content.
func (w *world) buf(t testing.TB, r int, content []byte) uintptr {
	t.Helper()
	p, err := w.devs[r].Alloc(max(1, len(content)))
	require.NoError(t, err)
	if len(content) > 0 {
		require.NoError(t, w.devs[r].CopyIn(p, content))
	}
	return p
}

// out is n bytes of rank r's device buffer p.
func (w *world) out(t testing.TB, r int, p uintptr, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if n > 0 {
		require.NoError(t, w.devs[r].CopyOut(b, p))
	}
	return b
}

// launch runs ops[r] on every rank at once and waits for the streams.
func (w *world) launch(t testing.TB, ops [][]engine.Op) {
	t.Helper()
	errs := make([]error, w.n)
	var wg sync.WaitGroup
	for r := range w.n {
		wg.Go(func() {
			if errs[r] = w.engines[r].Launch(ops[r]); errs[r] == nil {
				errs[r] = w.devs[r].Synchronize(w.streams[r])
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		require.NoError(t, w.engines[r].AsyncError(), "rank %d", r)
	}
}
