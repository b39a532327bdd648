package gpunet

import (
	"crypto/rand"
	"sync"
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

// world is n ranks on fake GPUs (one fake machine each: a host of its
// own as far as the backend knows), connected by the socket provider on
// loopback, each with a stream.
type world struct {
	n       int
	fakes   []*cudafake.Fake
	devs    []*device.CUDADevice
	streams []gccl.Stream
	engines []*engine.Engine
}

// newWorld opens the ranks' engines on the gpunet backend with FIFOs of
// buff bytes and ch channels, closed after the test.
func newWorld(t *testing.T, n, buff, ch int, timeout time.Duration) *world {
	t.Helper()
	w := &world{n: n, fakes: make([]*cudafake.Fake, n), devs: make([]*device.CUDADevice, n), streams: make([]gccl.Stream, n), engines: make([]*engine.Engine, n)}
	for r := range n {
		w.fakes[r] = cudafake.New(cudafake.Config{VABase: uintptr(1+r) << 52})
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
			cfg := Config{Transport: transport.Config{CommID: id, Secret: secret, NetName: "socket", IfName: "lo", ShmDisable: true}, BuffSize: buff, Channels: ch}
			w.engines[r], errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: net.Rank(r), Device: w.devs[r], Timeout: timeout, Backend: New(cfg)})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, e := range w.engines {
			_ = e.Close()
		}
	})
	return w
}

// buf is a device buffer of rank r holding content.
func (w *world) buf(t *testing.T, r int, content []byte) uintptr {
	t.Helper()
	p, err := w.devs[r].Alloc(max(1, len(content)))
	require.NoError(t, err)
	if len(content) > 0 {
		require.NoError(t, w.devs[r].CopyIn(p, content))
	}
	return p
}

// out is n bytes of rank r's device buffer p.
func (w *world) out(t *testing.T, r int, p uintptr, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if n > 0 {
		require.NoError(t, w.devs[r].CopyOut(b, p))
	}
	return b
}

// launch runs ops[r] on every rank at once and waits for the streams.
func (w *world) launch(t *testing.T, ops [][]engine.Op) {
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
