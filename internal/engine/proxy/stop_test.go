package proxy_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopThenPeerCloses: a proxy stopped (as an orderly Close does
// before its barrier) has first sent every slot its GPU posted, and a peer
// that then closes its ends is not reported: no error, the status word
// stays 0.
func TestStopThenPeerCloses(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	ps := connectAll(t, w, 64<<10)
	w.kick()
	require.NoError(t, run(w, ps, 100, nil)) // both directions carried 100 slots
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, w.ranks[0].p.Stop(ctx))
	require.NoError(t, w.ranks[0].p.Stop(ctx), "a second Stop")
	require.NoError(t, w.ranks[1].p.Close())
	time.Sleep(50 * time.Millisecond) // a serving proxy with slots to send would fail (TestPeerCloses)
	assert.NoError(t, w.ranks[0].p.Err())
	assert.Zero(t, w.statusOf(0))
}

// lingering is a connection whose Close waits for its peer to acknowledge
// for 10 s (ucx's orderly close towards a peer behind a cut link); Abort
// ends it at once.
type lingering struct {
	network.SendComm
	aborted atomic.Bool
}

func (l *lingering) Close() error {
	for start := time.Now(); time.Since(start) < 10*time.Second && !l.aborted.Load(); {
		time.Sleep(time.Millisecond)
	}
	return l.SendComm.Close()
}

func (l *lingering) Abort() error {
	l.aborted.Store(true)
	return l.SendComm.Close()
}

// TestAbortDoesNotWait: Abort ends every connection with network.Abort,
// so a peer that never answers costs no linger; Close would wait for it.
func TestAbortDoesNotWait(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	sc, rc := w.dial(t, 0, 1, 0)
	t.Cleanup(func() { _ = rc.Close() }) // the peer never serves its end
	l := &lingering{SendComm: sc}
	require.NoError(t, w.ranks[0].p.AddSend(w.fifo(t, 64<<10), l, proxy.Label{Peer: 1, Channel: 0}))
	start := time.Now()
	require.NoError(t, w.ranks[0].p.Abort())
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.True(t, l.aborted.Load(), "the connection was aborted, not closed")
	require.NoError(t, w.ranks[0].p.Close(), "Close after Abort")
}
