package fault

import (
	"fmt"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setTransport selects the transport for communicators made afterwards:
// "shm" (the default between ranks of one host) or "net" (SHM disabled).
func setTransport(t *testing.T, tr string) {
	if tr == "net" {
		t.Setenv("GCCL_SHM_DISABLE", "1")
	} else {
		t.Setenv("GCCL_SHM_DISABLE", "0")
	}
	env.Reload()
	t.Cleanup(func() { env.Reload() })
}

// TestDeadPeer: in each workload the last of four ranks launches its share
// and then dies (its communicator is aborted: its sockets and rings close)
// while the others are in the middle of the operation. Every survivor's
// stream wait must end with ErrRemote or ErrTimeout within twice the
// configured timeout, AsyncError must report it, and Abort must then be
// prompt.
func TestDeadPeer(t *testing.T) {
	const timeout = 2 * time.Second
	for _, tr := range []string{"shm", "net"} {
		for _, w := range Workloads {
			t.Run(tr+"/"+w.Name, func(t *testing.T) {
				setTransport(t, tr)
				deadPeer(t, w, timeout)
			})
		}
	}
}

func deadPeer(t *testing.T, w Workload, timeout time.Duration) {
	const n, count = 4, 1 << 20 // 4 MiB per buffer: long enough to be cut in the middle
	comms := makeComms(t, n, timeout)
	bufs := makeBufs(t, comms, 4*count)
	victim := n - 1
	for r, c := range comms {
		require.NoError(t, w.Launch(c, bufs[r], count), "launching on rank %d", r)
	}
	time.Sleep(2 * time.Millisecond)
	died := time.Now()
	require.NoError(t, comms[victim].Abort())

	took, errs := gccltest.Parallel(n-1, func(r int) (time.Duration, error) {
		err := bufs[r].Dev.Synchronize(bufs[r].S)
		if err == nil {
			// This rank's share finished before the victim died (it need
			// not talk to the victim): legal, but its next operation must
			// fail, within the deadline counted from its launch.
			relaunch := time.Now()
			if err = w.Launch(comms[r], bufs[r], count); err == nil {
				err = bufs[r].Dev.Synchronize(bufs[r].S)
			}
			return time.Since(relaunch), err
		}
		return time.Since(died), err
	})
	for r := range n - 1 {
		err, elapsed := errs[r], took[r]
		require.Error(t, err, "rank %d: operation with a dead peer succeeded", r)
		code := gccl.Code(err)
		assert.True(t, PeerFailure(err),
			"rank %d: got %v (%v), want remote error or timeout", r, code, err)
		assert.Less(t, elapsed, 2*timeout, "rank %d noticed the dead peer after %v", r, elapsed)
		async := comms[r].AsyncError()
		assert.ErrorIs(t, async, gccl.ErrRemote, "rank %d: AsyncError must report the lost peer", r)
		t.Logf("rank %d: %v after %v: %v", r, code, elapsed, err)
	}
	for r := range n - 1 {
		start := time.Now()
		assert.NoError(t, comms[r].Abort())
		assert.Less(t, time.Since(start), time.Second, fmt.Sprintf("Abort of survivor %d", r))
	}
}
