package proxy_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGarbage: counters and sizes that break the FIFO rules (a kernel bug,
// memory overwritten) fail the proxy with gccl.ErrInternal naming the
// connection, never a panic, a hang or bytes outside the slot; and the
// peer is told and stops too with the same code: the sender of a
// receiving connection that failed (network.Failer, network.Refuser),
// with nothing to send, and the receiver of a sending one
// (network.Failer), with nothing posted but its receives.
func TestGarbage(t *testing.T) {
	const slot = 8192
	st := stream{seed: 3, slotBytes: slot}
	cases := []struct {
		name   string
		broken int // the rank whose FIFO is corrupted
		act    func(t *testing.T, w *world, send, recv proxy.FIFO)
		want   string
	}{
		{"size past the slot", 0, func(t *testing.T, w *world, send, recv proxy.FIFO) {
			send.SetSize(0, slot+1)
			send.StoreTail(1)
		}, "size 8193 for slot 0"},
		{"huge size", 0, func(t *testing.T, w *world, send, recv proxy.FIFO) {
			send.SetSize(0, 0xffffffff)
			send.StoreTail(1)
		}, "size 4294967295"},
		{"tail past NSlots", 0, func(t *testing.T, w *world, send, recv proxy.FIFO) {
			send.StoreTail(proxy.NSlots + 1)
		}, "tail 9"},
		{"tail huge", 0, func(t *testing.T, w *world, send, recv proxy.FIFO) {
			send.StoreTail(1 << 63)
		}, "sending FIFO is corrupted"},
		{"tail back", 0, func(t *testing.T, w *world, send, recv proxy.FIFO) {
			require.NoError(t, launch(
				func() error { return w.gpu(0, nil).send(send, st, 3) },
				func() error { return w.gpu(1, nil).recv(recv, st, 3) })())
			require.Eventually(t, func() bool { return send.Head() == 3 }, wait, time.Millisecond)
			send.StoreTail(1)
		}, "tail 1 with 3 slots posted"},
		{"head past tail", 1, func(t *testing.T, w *world, send, recv proxy.FIFO) {
			recv.StoreHead(5)
		}, "head 5"},
		{"head back", 1, func(t *testing.T, w *world, send, recv proxy.FIFO) {
			require.NoError(t, launch(
				func() error { return w.gpu(0, nil).send(send, st, 4) },
				func() error { return w.gpu(1, nil).recv(recv, st, 4) })())
			time.Sleep(20 * time.Millisecond) // the proxy saw head 4 (it polls at least every 100µs)
			recv.StoreHead(2)
		}, "head 2 after 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			noLeaks(t)
			w := newWorld(t, 2, func(int) proxy.Config { return proxy.Config{Timeout: 10 * time.Second} })
			send, recv := w.connect(t, 0, 1, 2, slot)
			c.act(t, w, send, recv)
			err := w.waitErr(t, c.broken, 5*time.Second)
			assert.ErrorIs(t, err, gccl.ErrInternal)
			assert.Contains(t, err.Error(), "channel 2")
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, uint32(kernels.StatusNetwork), w.statusOf(c.broken))
			// the peer learns it: a receiver's failure travels back to its
			// sender (network.Refuser), a sender's forward to its receiver
			// (network.Failer on the SendComm), with the same code
			peer := 1 - c.broken
			err = w.waitErr(t, peer, 5*time.Second)
			assert.ErrorIs(t, err, gccl.ErrInternal)
			assert.Contains(t, err.Error(), c.want, "rank %d reports rank %d's failure", peer, c.broken)
			assert.Equal(t, uint32(kernels.StatusNetwork), w.statusOf(peer))
		})
	}
}

// TestStatusWordKept: a status word already set (a kernel's timeout) is
// not overwritten by the proxy's failure.
func TestStatusWordKept(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	send, _ := w.connect(t, 0, 1, 0, 4096)
	atomic.StoreUint32(&w.ranks[0].status, kernels.StatusTimeout) // the proxy reads it while it runs
	send.StoreTail(proxy.NSlots + 1)
	w.waitErr(t, 0, 5*time.Second)
	assert.Equal(t, uint32(kernels.StatusTimeout), w.statusOf(0))
}

// TestAddErrors: bad arguments and a closed or failed proxy are typed
// errors, and the connection stays the caller's.
func TestAddErrors(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	p := w.ranks[0].p
	f := w.fifo(t, 4096)
	require.ErrorIs(t, p.AddSend(f, nil, proxy.Label{}), gccl.ErrInvalidArgument)
	require.ErrorIs(t, p.AddRecv(f, nil, proxy.Label{}), gccl.ErrInvalidArgument)

	sc, rc := w.dial(t, 0, 1, 0)
	defer sc.Close()
	defer rc.Close()
	err := p.AddSend(proxy.FIFO{}, sc, proxy.Label{Peer: 1})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "NewFIFO")

	// a failed proxy takes no more connections
	q := w.ranks[1].p
	bad := w.fifo(t, 4096)
	sc2, rc2 := w.dial(t, 1, 0, 0)
	require.NoError(t, q.AddSend(bad, sc2, proxy.Label{Peer: 0}))
	defer rc2.Close()
	bad.StoreTail(1 << 40)
	w.waitErr(t, 1, 5*time.Second)
	require.ErrorIs(t, q.AddRecv(f, rc, proxy.Label{Peer: 0}), gccl.ErrInternal)

	require.NoError(t, p.Close())
	err = p.AddRecv(f, rc, proxy.Label{Peer: 1})
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	assert.Contains(t, err.Error(), "closed proxy")
	var nilProxy *proxy.Proxy
	assert.NoError(t, nilProxy.Close())

	// the caller still owns rc and sc: they work
	var _ network.RecvComm = rc
	_, err = sc.Isend(network.Region{Kind: network.MemHost}, mustRegister(t, sc), 0)
	assert.NoError(t, err)
}

func mustRegister(t *testing.T, c network.Comm) network.MemHandle {
	m, err := c.Register(network.Region{Kind: network.MemHost})
	require.NoError(t, err)
	return m
}
