package bootstrap

import (
	"context"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func initFour(t *testing.T) []*Net {
	id, err := NewRootID()
	require.NoError(t, err)
	return initAll(t, 4, func(r int) (*Net, error) {
		return Init(context.Background(), id, 4, r, Config{Timeout: 10 * time.Second})
	})
}

// TestAbortedPeerIsLost: a peer that aborts (or dies: the kernel closes its
// sockets the same way) is reported lost on every other rank, promptly.
func TestAbortedPeerIsLost(t *testing.T) {
	nets := initFour(t)
	require.NoError(t, nets[2].Abort())
	for r, n := range nets {
		if r == 2 {
			continue
		}
		select {
		case <-n.Lost():
		case <-time.After(2 * time.Second):
			t.Fatalf("rank %d did not notice rank 2's abort", r)
		}
		err := n.LostErr()
		require.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
		assert.Contains(t, err.Error(), "rank 2")
	}
}

// TestClosedPeerIsNotLost: a peer that closes normally says goodbye, and is
// not reported lost; a wait on it still fails at once.
func TestClosedPeerIsNotLost(t *testing.T) {
	nets := initFour(t)
	require.NoError(t, nets[1].Close())
	time.Sleep(100 * time.Millisecond)
	for r, n := range nets {
		if r == 1 {
			continue
		}
		select {
		case <-n.Lost():
			t.Fatalf("rank %d counts a normally closed peer as lost: %v", r, n.LostErr())
		default:
		}
		assert.NoError(t, n.LostErr())
		_, err := n.Recv(context.Background(), 1, 7)
		assert.Error(t, err, "rank %d receiving from a closed peer", r)
	}
}
