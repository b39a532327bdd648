package host

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAllToAllGroup launches every rank's sends and receives to every rank
// (self included) as one launch, on buffers larger than the SHM ring, which
// deadlocks unless the peers progress concurrently.
func TestAllToAllGroup(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, block = 4, 300_001
	w := newWorld(t, n, "")
	sends, recvs := make([][]byte, n), make([][]byte, n)
	for r := range n {
		sp, sb := w.alloc(t, r, n*block, rng)
		rp, rb := w.alloc(t, r, n*block, rng)
		sends[r], recvs[r] = sb, rb
		var ops []engine.Op
		for j := range n {
			ops = append(ops,
				engine.Op{Kind: algo.P2PSend, Send: sp + uintptr(j*block), Count: block, Type: gccl.Uint8, Peer: j, Stream: w.streams[r]},
				engine.Op{Kind: algo.P2PRecv, Recv: rp + uintptr(j*block), Count: block, Type: gccl.Uint8, Peer: j, Stream: w.streams[r]})
		}
		require.NoError(t, w.engines[r].Launch(ops))
	}
	w.sync(t)
	for r := range n {
		for j := range n {
			require.True(t, bytes.Equal(sends[j][r*block:(r+1)*block], recvs[r][j*block:(j+1)*block]), "block %d→%d", j, r)
		}
	}
}

func TestValidation(t *testing.T) {
	w := newWorld(t, 2, "")
	e, s := w.engines[0], w.streams[0]
	buf, _ := w.alloc(t, 0, 64, rand.New(rand.NewPCG(1, 1)))
	for arg, op := range map[string]engine.Op{
		"sendbuff": {Kind: algo.AllReduce, Recv: buf, Count: 4, Type: gccl.Int32, Stream: s},
		"recvbuff": {Kind: algo.AllReduce, Send: buf, Count: 4, Type: gccl.Int32, Stream: s},
		"count":    {Kind: algo.AllReduce, Send: buf, Recv: buf, Count: -1, Type: gccl.Int32, Stream: s},
		"datatype": {Kind: algo.AllReduce, Send: buf, Recv: buf, Count: 4, Type: 99, Stream: s},
		"op":       {Kind: algo.AllReduce, Send: buf, Recv: buf, Count: 4, Type: gccl.Int32, Op: 77, Stream: s},
		"root":     {Kind: algo.Broadcast, Send: buf, Recv: buf, Count: 4, Type: gccl.Int32, Root: 2, Stream: s},
		"peer":     {Kind: algo.P2PSend, Send: buf, Count: 4, Type: gccl.Int32, Peer: -1, Stream: s},
		"stream":   {Kind: algo.AllReduce, Send: buf, Recv: buf, Count: 4, Type: gccl.Int32, Stream: 12345},
	} {
		err := e.Launch([]engine.Op{op})
		var ge *gccl.Error
		require.True(t, errors.As(err, &ge), "%s: %v", arg, err)
		require.Equal(t, arg, ge.Arg, "%s: %v", arg, err)
	}
	// Overlap that is not in place: AllGather with sendbuff at the wrong offset.
	err := e.Launch([]engine.Op{{Kind: algo.AllGather, Send: buf + 4, Recv: buf, Count: 2, Type: gccl.Int32, Stream: s}})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	// Overflowing count.
	err = e.Launch([]engine.Op{{Kind: algo.AllGather, Send: buf, Recv: buf + 64, Count: 1 << 61, Type: gccl.Int64, Stream: s}})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

// TestClosedEngine: ops on a closed engine fail at once with a typed error.
func TestClosedEngine(t *testing.T) {
	w := newWorld(t, 1, "")
	buf, _ := w.alloc(t, 0, 16, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, w.engines[0].Abort())
	err := w.engines[0].Launch([]engine.Op{{Kind: algo.AllReduce, Send: buf, Recv: buf, Count: 4, Type: gccl.Int32, Stream: w.streams[0]}})
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
}

// TestCauseErrPrefersTheFailure: a sibling lane cancelled because another
// lane failed must not hide that failure, whatever the lanes' order.
func TestCauseErrPrefersTheFailure(t *testing.T) {
	// What a transport's wait returns when its context is cancelled.
	cancelled := errs.WrapPeer(gccl.Errorf(gccl.TimeoutError, "receive", "cancelled while waiting: %w", context.Canceled), 1, "receiving from")
	dead := gccl.Errorf(gccl.RemoteError, "peer", "receiving from rank 2: it exited")
	assert.Equal(t, dead, causeErr(nil, cancelled, dead, cancelled))
	assert.Equal(t, dead, causeErr(dead, cancelled))
	assert.Equal(t, cancelled, causeErr(nil, cancelled), "only cancellations: the first")
	assert.NoError(t, causeErr(nil, nil))
}

// TestLocalRanks counts the ranks on this rank's host by host hash,
// whatever transport links them.
func TestLocalRanks(t *testing.T) {
	b := &Backend{rank: 1, infos: []transport.PeerInfo{{HostHash: 7}, {HostHash: 7}, {HostHash: 8}, {HostHash: 7}}}
	assert.Equal(t, 3, b.localRanks())
	b.rank = 2
	assert.Equal(t, 1, b.localRanks())
}

// TestSmallLanesNameEveryStalledPeer: a launch whose small sends fit in
// their rings runs its lanes one after the other; when neither peer sends,
// the timeout still names both, as concurrent lanes would.
func TestSmallLanesNameEveryStalledPeer(t *testing.T) {
	const n, count = 3, 16
	w := newWorldTimeout(t, n, "", 500*time.Millisecond)
	rng := rand.New(rand.NewPCG(5, 6))
	ring := func(r int) []engine.Op { // every rank sends to and receives from every other: connects them all
		var ops []engine.Op
		p, _ := w.alloc(t, r, 2*n*count, rng)
		for j := range n {
			if j != r {
				ops = append(ops,
					engine.Op{Kind: algo.P2PSend, Send: p + uintptr(j*count), Count: count, Type: gccl.Uint8, Peer: j, Stream: w.streams[r]},
					engine.Op{Kind: algo.P2PRecv, Recv: p + uintptr((n+j)*count), Count: count, Type: gccl.Uint8, Peer: j, Stream: w.streams[r]})
			}
		}
		return ops
	}
	for r := range n {
		require.NoError(t, w.engines[r].Launch(ring(r)))
	}
	w.sync(t)
	require.NoError(t, w.engines[0].Launch(ring(0)), "ranks 1 and 2 launch nothing")
	err := w.devs[0].Synchronize(w.streams[0])
	require.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Contains(t, err.Error(), "ranks 1 and 2", "both peers the receives waited for: %v", err)
}
