package ucx

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWiredUpWhenFlushed: once a new endpoint's flush returns, its wire-up
// is complete in both directions, so a sender that goes at once after a
// rendezvous send (whose protocol needs the peer's endpoint id) leaves no
// wire-up reply in flight at the receiver. Before, the rendezvous send
// started the wire-up, and the receiver's reply, queued on a TCP
// connection back to a worker being destroyed, was purged when that
// connection failed: UCX 1.12 and 1.13 builds with assertions abort the
// process then (openucx/ucx#7648, "got REP message").
func TestWiredUpWhenFlushed(t *testing.T) {
	c := tcpContext(t)
	big := make([]byte, 1<<20) // over any eager threshold: rendezvous
	for range 20 {
		a, b, ep := connected(t, c)
		stop := progressing(b) // the receiver progresses throughout, as a live peer does
		require.NoError(t, ep.Flush(10*time.Second))
		r, err := ep.Send(ptr(big), len(big), 1, nil, false) // nobody receives it
		require.NoError(t, err)
		require.NoError(t, ep.Close(true, 5*time.Second))
		r.Release()
		a.Close()
		time.Sleep(20 * time.Millisecond) // the receiver notices the sender's end
		stop()
		b.Close()
	}
}
