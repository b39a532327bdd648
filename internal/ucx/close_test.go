package ucx

import (
	"errors"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloseWhileFlushStuck: a flushing close that cannot finish (the peer
// takes nothing more, as behind a cut link) times out, and the worker is
// destroyed with the close still pending in UCX. Before, the close's
// request had not been handed back with ucp_request_free, and UCX 1.13
// builds with assertions aborted the process in ucp_worker_destroy
// (ucp_ep.c:382, "Assertion `req->flags & UCP_REQUEST_FLAG_RELEASED'
// failed": the destroy purges the close's flush, which queues the
// endpoint's disconnect callback, and removing that callback asserts that
// its user released the request).
func TestCloseWhileFlushStuck(t *testing.T) {
	c := tcpContext(t)
	a, b, ep := wiredPair(t, c)
	stuckFlush(t, ep)
	err := ep.Close(false, 100*time.Millisecond)
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "a close that cannot flush times out: %v", err)
	start := time.Now()
	a.Close()
	assert.Less(t, time.Since(start), DrainTimeout+time.Second)
	b.Close()
}

// stuckFlush fills ep's connection, whose peer no longer progresses, until
// a send completes with data still queued in UCX (an endpoint flush cannot
// finish, as towards a peer behind a cut link), with no send of ours
// pending.
func stuckFlush(t *testing.T, ep *Endpoint) {
	t.Helper()
	msg := make([]byte, 4096)
	stuck := false
	for i := 0; i < 1<<16 && !stuck; i++ {
		r, err := ep.Send(ptr(msg), len(msg), 1, nil, false)
		require.NoError(t, err)
		if done, _, err := r.Test(); !done || err != nil {
			r.Release()
			t.Skipf("send %d went pending before the connection filled: cannot stage a stuck flush", i)
		}
		stuck = errors.Is(ep.Flush(time.Millisecond), gccl.ErrTimeout)
	}
	require.True(t, stuck, "the connection never filled")
}

// TestHurry: once a worker is hurried, a flushing close that cannot finish
// and the worker's Close both end within the bound instead of their own
// deadlines (closeLinger and DrainTimeout above: seconds each), and the
// destroy with the close still pending in UCX does not abort (the close
// is handed back as in TestCloseWhileFlushStuck). A Wait asleep when the
// bound is set wakes up for it.
func TestHurry(t *testing.T) {
	c := tcpContext(t)
	a, b, ep := wiredPair(t, c)
	stuckFlush(t, ep)
	start := time.Now()
	time.AfterFunc(50*time.Millisecond, func() { a.Hurry(100 * time.Millisecond) })
	err := ep.Close(false, 10*time.Second)
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "a close that cannot flush times out: %v", err)
	a.Close()
	assert.Less(t, time.Since(start), time.Second, "the close and the destroy of a hurried worker")
	b.Close()
}

// TestCloseWithSendPending: a flushing close of an endpoint with a send
// still pending (a rendezvous send nobody receives) is forced, so the
// send ends with ErrCanceled and the worker is destroyed with nothing of
// it listed. A flushing close would never finish, and the destroy would
// abort an assertion build (ucp_ep.c:437, "proto_reqs").
func TestCloseWithSendPending(t *testing.T) {
	c := tcpContext(t)
	a, b, ep := wiredPair(t, c)
	stop := progressing(b)
	big := make([]byte, 1<<20) // over any eager threshold: rendezvous
	r, err := ep.Send(ptr(big), len(big), 1, nil, false)
	require.NoError(t, err)
	require.NoError(t, ep.Close(false, time.Second))
	err = r.Wait(5 * time.Second)
	assert.True(t, errors.Is(err, ErrCanceled), "%v", err)
	r.Release()
	_, err = ep.Send(ptr(big), 1, 1, nil, false)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "a send on a closed endpoint: %v", err)
	a.Close()
	stop()
	b.Close()
}

// wiredPair is an endpoint from a new worker a to a new worker b
// (connected), wired up (b progresses meanwhile); b no longer progresses
// after.
func wiredPair(t *testing.T, c *Context) (a, b *Worker, ep *Endpoint) {
	t.Helper()
	a, b, ep = connected(t, c)
	stop := progressing(b)
	defer stop()
	require.NoError(t, ep.Flush(10*time.Second))
	return a, b, ep
}
