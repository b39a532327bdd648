package proxy_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/network/socket"
	"github.com/stretchr/testify/require"
)

// wait bounds every wait of the tests.
const wait = 20 * time.Second

// rank is one rank of a test: its proxy, the status word its kernels
// poll, and its listener on loopback.
type rank struct {
	p      *proxy.Proxy
	status uint32
	prov   network.Provider
	ln     network.Listener
	cfg    network.Config
}

// world is ranks whose proxies are connected through the socket provider
// on loopback.
type world struct {
	ranks []*rank
	pins  []*runtime.Pinner
}

// noLeaks fails t when it leaves goroutines or descriptors behind once its
// cleanups ran (call it first, so that its cleanup runs last).
func noLeaks(t testing.TB) {
	before := leakcheck.Take()
	t.Cleanup(func() {
		if leaks := before.Leaks(leakcheck.Grace); len(leaks) > 0 && !t.Failed() {
			t.Errorf("left behind:\n%s", strings.Join(leaks, "\n"))
		}
	})
}

// newWorld makes n ranks, rank r's proxy configured by cfg(r) (its Status
// set to the rank's status word). Cleanup closes the proxies, then the
// listeners, then unpins the FIFOs' memory.
func newWorld(t testing.TB, n int, cfg func(r int) proxy.Config) *world {
	w := &world{}
	c := newNetConfig()
	for r := range n {
		pc := proxy.Config{}
		if cfg != nil {
			pc = cfg(r)
		}
		w.ranks = append(w.ranks, newRank(t, r, c, pc))
	}
	t.Cleanup(func() {
		for _, rk := range w.ranks {
			require.NoError(t, rk.p.Close())
			require.NoError(t, rk.p.Close(), "a second Close")
			require.NoError(t, rk.ln.Close())
		}
		for _, p := range w.pins {
			p.Unpin()
		}
	})
	return w
}

// newNetConfig is a network configuration with a fresh communicator ID
// and secret, which every rank of a world shares.
func newNetConfig() network.Config {
	var c network.Config
	_, _ = rand.Read(c.CommID[:])
	_, _ = rand.Read(c.Secret[:])
	c.Timeout = wait
	return c
}

// newRank makes rank r of a world whose ranks share c: its listener on
// loopback and its proxy, configured by pc (Rank and Status set here, the
// test's log unless pc has a Logger). The caller closes both.
func newRank(t testing.TB, r int, c network.Config, pc proxy.Config) *rank {
	rk := &rank{prov: socket.New(socket.Options{IfName: "lo"}), cfg: c}
	rk.cfg.Rank = r
	ln, err := rk.prov.Listen(0, rk.cfg)
	require.NoError(t, err)
	rk.ln = ln
	pc.Rank, pc.Status = r, &rk.status
	if pc.Logger == nil {
		pc.Logger = slog.New(slog.NewTextHandler(testLog{t}, nil))
	}
	rk.p = proxy.New(pc)
	return rk
}

// fifo is a zeroed, page-aligned, pinned FIFO of Go memory.
func (w *world) fifo(t testing.TB, slotBytes int) proxy.FIFO {
	n := proxy.FIFOBytes(slotBytes)
	b := make([]byte, n+4096)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 4095)
	b = b[off : off+n : off+n]
	pin := new(runtime.Pinner)
	pin.Pin(&b[0])
	w.pins = append(w.pins, pin)
	f, err := proxy.NewFIFO(b, slotBytes)
	require.NoError(t, err)
	return f
}

// dial connects rank from to rank to on channel: the raw sending and
// receiving ends.
func (w *world) dial(t testing.TB, from, to, ch int) (network.SendComm, network.RecvComm) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	src, dst := w.ranks[from], w.ranks[to]
	sc, err := src.prov.Connect(ctx, 0, dst.ln.Handle(), src.cfg, ch)
	require.NoError(t, err)
	rc, err := dst.ln.Accept(ctx, network.Peer{Rank: from, Channel: ch})
	require.NoError(t, err)
	return sc, rc
}

// connect connects rank from to rank to on channel through two FIFOs of
// slotBytes slots, served by their proxies: the sending FIFO (from's) and
// the receiving one (to's).
func (w *world) connect(t testing.TB, from, to, ch, slotBytes int) (send, recv proxy.FIFO) {
	sc, rc := w.dial(t, from, to, ch)
	send, recv = w.fifo(t, slotBytes), w.fifo(t, slotBytes)
	require.NoError(t, w.ranks[from].p.AddSend(send, sc, proxy.Label{Peer: to, Channel: ch}))
	require.NoError(t, w.ranks[to].p.AddRecv(recv, rc, proxy.Label{Peer: from, Channel: ch}))
	return send, recv
}

// kick kicks every rank's proxy, as a launch on every rank does.
func (w *world) kick() {
	for _, rk := range w.ranks {
		rk.p.Kick()
	}
}

// waitErr waits for rank r's proxy to fail and returns its error.
func (w *world) waitErr(t testing.TB, r int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for w.ranks[r].p.Err() == nil {
		require.True(t, time.Now().Before(deadline), "rank %d's proxy did not fail within %v", r, within)
		time.Sleep(time.Millisecond)
	}
	return w.ranks[r].p.Err()
}

// testLog writes a proxy's log lines to the test's log.
type testLog struct{ t testing.TB }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// statusOf loads rank r's status word.
func (w *world) statusOf(r int) uint32 { return atomic.LoadUint32(&w.ranks[r].status) }
