package colltest

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/stretchr/testify/require"
)

// World is n ranks of one communicator in this process: rank r's Comm, its
// device and one host stream each, and a buffer arena per rank.
type World struct {
	Comms   []*comm.Comm
	Devs    []device.Device
	Streams []gccl.Stream
	arenas  []*arena
}

// DefaultTimeout bounds every wait of a World's communicators, so that a
// broken test fails instead of hanging.
const DefaultTimeout = 30 * time.Second

// New creates an n-rank communicator through comm.InitRankConfig, one
// goroutine per rank, with cfg (nil = defaults, with DefaultTimeout). The
// communicators, streams and buffers are released when the test ends.
//
// A World runs the host backend whatever the machine: its tests check
// results through host views of the buffers (Alloc), which device memory
// has not. cfg.Backend device.Auto means the host; any other backend but
// the host fails the test (test/gpu runs the operations on GPUs).
func New(t testing.TB, n int, cfg *comm.Config) *World {
	t.Helper()
	if cfg == nil {
		cfg = &comm.Config{Timeout: DefaultTimeout}
	}
	if cfg.Backend != device.Auto && cfg.Backend != device.Host {
		t.Fatalf("colltest: a World checks results through host views of its buffers; backend %v has none (use test/gpu)", cfg.Backend)
	}
	host := *cfg
	host.Backend = device.Host
	cfg = &host
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	w := &World{Comms: make([]*comm.Comm, n), Devs: make([]device.Device, n),
		Streams: make([]gccl.Stream, n), arenas: make([]*arena, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { w.Comms[r], errs[r] = comm.InitRankConfig(n, id, r, cfg) })
	}
	wg.Wait()
	t.Cleanup(w.close)
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	for r, c := range w.Comms {
		w.WaitReady(t, r)
		w.Devs[r] = c.Device()
		w.Streams[r], err = w.Devs[r].NewStream()
		require.NoError(t, err)
		w.arenas[r] = &arena{dev: w.Devs[r]}
	}
	return w
}

// WaitReady polls rank r's Status until a nonblocking init has finished,
// and fails the test if it failed.
func (w *World) WaitReady(t testing.TB, r int) {
	t.Helper()
	deadline := time.Now().Add(DefaultTimeout)
	for {
		err := w.Comms[r].Status()
		if err == nil {
			return
		}
		if gccl.Code(err) != gccl.InProgress || time.Now().After(deadline) {
			require.NoError(t, err, "rank %d init", r)
		}
		time.Sleep(time.Millisecond)
	}
}

// N is the number of ranks.
func (w *World) N() int { return len(w.Comms) }

func (w *World) close() {
	for r, c := range w.Comms {
		if w.Streams[r] != 0 {
			_ = w.Devs[r].Synchronize(w.Streams[r])
			_ = w.Devs[r].DestroyStream(w.Streams[r])
		}
		_ = c.Close()
		if w.arenas[r] != nil {
			w.arenas[r].free()
		}
	}
}

// Sync waits for every rank's stream and fails on the first error.
func (w *World) Sync(t testing.TB) {
	t.Helper()
	for r := range w.Comms {
		require.NoError(t, w.Devs[r].Synchronize(w.Streams[r]), "rank %d", r)
	}
}

// Alloc returns n bytes of rank r's memory filled with random bytes
// (poison), 64-byte aligned, and their host view. n == 0 gives a valid
// pointer and an empty slice. Buffers live until Reset. The poison goes in
// through the device's CopyIn, never through the view.
func (w *World) Alloc(t testing.TB, r, n int, rng *rand.Rand) (uintptr, []byte) {
	t.Helper()
	p, err := w.arenas[r].alloc(n)
	require.NoError(t, err)
	poison := make([]byte, n)
	Poison(poison, rng)
	require.NoError(t, w.Devs[r].CopyIn(p, poison))
	return p, device.HostBytes(p, n)
}

// Reset forgets every buffer handed out by Alloc (call after Sync).
func (w *World) Reset() {
	for _, a := range w.arenas {
		a.reset()
	}
}

// poisonTile is the period of Poison's bytes: larger buffers repeat it, so
// that poisoning megabytes stays cheap under the race detector.
const poisonTile = 64 << 10

// Poison fills b with random bytes (repeating every 64 KiB).
func Poison(b []byte, rng *rand.Rand) {
	head := b[:min(len(b), poisonTile)]
	for i := 0; i+8 <= len(head); i += 8 {
		v := rng.Uint64()
		for k := range 8 {
			head[i+k] = byte(v >> (8 * k))
		}
	}
	for i := len(head) &^ 7; i < len(head); i++ {
		head[i] = byte(rng.Uint32())
	}
	for off := len(head); off < len(b); off += copy(b[off:], head) {
	}
}
