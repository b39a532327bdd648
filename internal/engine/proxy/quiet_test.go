package proxy_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingRecv counts the Tests of the receives posted on it.
type countingRecv struct {
	network.RecvComm
	tests atomic.Int64
}

func (c *countingRecv) Irecv(r network.Region, m network.MemHandle, tag uint32) (network.Request, error) {
	q, err := c.RecvComm.Irecv(r, m, tag)
	if q == nil || err != nil {
		return nil, err
	}
	return countedRequest{q, &c.tests}, nil
}

type countedRequest struct {
	network.Request
	tests *atomic.Int64
}

func (r countedRequest) Test() (bool, int, error) {
	r.tests.Add(1)
	return r.Request.Test()
}

// connectCounted is world.connect with the receiving end's Tests counted.
func (w *world) connectCounted(t *testing.T, from, to, ch int) (send, recv proxy.FIFO, rc *countingRecv) {
	sc, raw := w.dial(t, from, to, ch)
	rc = &countingRecv{RecvComm: raw}
	send, recv = w.fifo(t, 4096), w.fifo(t, 4096)
	require.NoError(t, w.ranks[from].p.AddSend(send, sc, proxy.Label{Peer: to, Channel: ch}))
	require.NoError(t, w.ranks[to].p.AddRecv(recv, rc, proxy.Label{Peer: from, Channel: ch}))
	return send, recv, rc
}

// TestQuietReceives: a receiving connection on which nothing arrived for
// a while (a channel a small operation does not use) is still served
// while the proxy polls hot for the connection in use, which skips its
// tests on most passes (TestServeQuiet); the counts are logged.
func TestQuietReceives(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	s01, r01, busy := w.connectCounted(t, 0, 1, 0)
	s10, r10 := w.connect(t, 1, 0, 0, 4096)
	qs, qr, quiet := w.connectCounted(t, 0, 1, 1)
	time.Sleep(5 * time.Millisecond) // nothing arrives on either: both are quiet

	st := stream{seed: 7, slotBytes: 512, full: true}
	g0, g1 := w.gpu(0, nil), w.gpu(1, nil)
	g0.hot, g1.hot = true, true
	w.kick()
	busy.tests.Store(0)
	quiet.tests.Store(0)
	require.NoError(t, launch(
		func() error { return g0.pingPong(s01, r10, st, 300, true) },
		func() error { return g1.pingPong(s10, r01, st, 300, false) })())
	t.Logf("receives tested %d times on the connection in use, %d on the quiet one", busy.tests.Load(), quiet.tests.Load())
	w.kick()
	require.NoError(t, launch(
		func() error { return g0.pingPong(s01, r10, st, 1000, true) },
		func() error { return w.gpu(0, nil).send(qs, st, 1) },
		func() error { return w.gpu(1, nil).recv(qr, st, 1) },
		func() error { return g1.pingPong(s10, r01, st, 1000, false) })(), "a slot on the quiet connection")
	for r := range 2 {
		assert.NoError(t, w.ranks[r].p.Err())
	}
}
