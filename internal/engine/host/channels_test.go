package host

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostsWorld is n ranks, per of them on each simulated host (host hashes
// differ, so ranks of different hosts connect over the network provider),
// chunks of 4 KiB and at most channels channels.
func hostsWorld(t *testing.T, n, per, channels int) *world {
	t.Helper()
	return hostsWorldTimeout(t, n, per, channels, 20*time.Second)
}

func hostsWorldTimeout(t *testing.T, n, per, channels int, timeout time.Duration) *world {
	t.Helper()
	id := enginetest.Identity()
	w, errs := openWorld(t, n, timeout, func(r int) Config {
		tc := id
		tc.HostHash = uint64(1 + r/per)
		return Config{Transport: tc, Reducer: testReducer{}, ChunkBytes: 4096, Channels: channels}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	return w
}

// TestChannelsAcrossHosts runs every collective, in and out of place, on
// 2 hosts × 1 and × 2 ranks with up to 4 channels, at counts that use 1 to
// 4 channels and are no multiple of the chunk, and checks every element
// of random int32 inputs.
func TestChannelsAcrossHosts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range [][2]int{{2, 1}, {4, 2}} {
		n, per := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", n/per, per), func(t *testing.T) {
			w := hostsWorld(t, n, per, 4)
			for _, kind := range []algo.Kind{algo.AllReduce, algo.AllGather, algo.ReduceScatter, algo.Broadcast, algo.Reduce} {
				for _, count := range []int{1, 2*16384*n + 3, 5*16384*n + 5} { // 1, 2 and 4 channels (algo.ChannelBytes)
					for _, inPlace := range []bool{false, true} {
						w.collective(t, rng, kind, count, rng.IntN(n), inPlace)
					}
				}
			}
			b := w.backends[0]
			require.Len(t, b.conns, 4)
			for c := range 4 {
				assert.NotNil(t, b.conns[c][n-1], "channel %d to a rank of the other host was used", c)
			}
		})
	}
}

// TestChannelsStall: a rank that never joins a 4-channel AllReduce is
// named by the others' timeout, one error per rank however many channels
// waited for it.
func TestChannelsStall(t *testing.T) {
	const n, count = 3, 200_003 // 4 channels (algo.ChannelBytes per rank each)
	w := hostsWorldTimeout(t, n, 1, 4, 500*time.Millisecond)
	rng := rand.New(rand.NewPCG(9, 10))
	w.connectAll(t, 4) // the waits are for data, not for connections
	for r := range n - 1 {
		p, _ := w.alloc(t, r, 4*count, rng)
		require.NoError(t, w.engines[r].Launch([]engine.Op{{Kind: algo.AllReduce, Send: p, Recv: p, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}}))
	}
	for r := range n - 1 {
		err := w.devs[r].Synchronize(w.streams[r])
		require.ErrorIs(t, err, gccl.ErrTimeout, "rank %d", r)
		assert.Contains(t, err.Error(), "waiting for rank 2", "rank %d: %v", r, err)
		t.Logf("rank %d: %v", r, err)
	}
}

// connectAll connects every rank to every other on channels [0, nch), as
// the first operation that uses them would, within 20 s rather than the
// world's timeout: a stall test's timeout is short, and a warm-up
// collective under -race on a loaded machine outlasted it (a 200_003-int32
// AllReduce of 4 KiB chunks took 0.2-0.5 s there).
func (w *world) connectAll(t *testing.T, nch int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	peers := make([]int, len(w.backends))
	for r := range peers {
		peers[r] = r
	}
	errs := make([]error, len(w.backends))
	var wg sync.WaitGroup
	for r, b := range w.backends {
		wg.Go(func() { errs[r] = b.connect(ctx, func() string { return "connectAll" }, peers, nch) })
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

// TestChannelsMismatch: ranks that launch AllReduces of different counts
// (the same or different channel counts) get gccl.ErrInvalidUsage on
// every rank, well before the deadline.
func TestChannelsMismatch(t *testing.T) {
	for name, counts := range map[string][2]int{"same channels": {160_001, 160_017}, "other channels": {160_001, 4_097}} {
		t.Run(name, func(t *testing.T) {
			w := hostsWorldTimeout(t, 2, 1, 4, 10*time.Second)
			rng := rand.New(rand.NewPCG(11, 12))
			start := time.Now()
			for r := range 2 {
				p, _ := w.alloc(t, r, 4*counts[r], rng)
				require.NoError(t, w.engines[r].Launch([]engine.Op{{Kind: algo.AllReduce, Send: p, Recv: p, Count: counts[r], Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}}))
			}
			for r := range 2 {
				err := w.devs[r].Synchronize(w.streams[r])
				require.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank %d", r)
			}
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// TestChannelsOneHost: ranks of one host use one channel whatever the
// setting.
func TestChannelsOneHost(t *testing.T) {
	w := hostsWorld(t, 2, 2, 4)
	require.Len(t, w.backends[0].conns, 1)
	w.collective(t, rand.New(rand.NewPCG(1, 2)), algo.AllReduce, 50_001, 0, false)
}

// TestChannelsDisagree: ranks with different GCCL_NET_NCHANNELS or
// GCCL_CHUNKSIZE fail to open with gccl.ErrInvalidUsage naming the
// setting, on every rank, at once.
func TestChannelsDisagree(t *testing.T) {
	for setting, mut := range map[string]func(*Config){
		"GCCL_NET_NCHANNELS": func(c *Config) { c.Channels = 2 },
		"GCCL_CHUNKSIZE":     func(c *Config) { c.ChunkBytes = 8192 },
	} {
		t.Run(setting, func(t *testing.T) {
			id := enginetest.Identity()
			start := time.Now()
			_, errs := openWorld(t, 3, 20*time.Second, func(r int) Config {
				tc := id
				tc.HostHash = uint64(1 + r)
				cfg := Config{Transport: tc, Reducer: testReducer{}, ChunkBytes: 4096, Channels: 4}
				if r == 1 {
					mut(&cfg)
				}
				return cfg
			})
			for r, err := range errs {
				require.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank %d", r)
				assert.Contains(t, err.Error(), setting, "rank %d", r)
			}
			assert.Less(t, time.Since(start), 10*time.Second)
		})
	}
}

// TestChannelsBadSetting: a channel count out of range is refused.
func TestChannelsBadSetting(t *testing.T) {
	for _, ch := range []int{-1, algo.MaxChannels + 1} {
		_, err := resolveSettings(Config{Channels: ch})
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "%d", ch)
	}
	s, err := resolveSettings(Config{})
	require.NoError(t, err)
	assert.Equal(t, settings{chunk: algo.DefaultChunkBytes, channels: DefaultChannels}, s)
}

// collective runs an int32 Sum collective of count elements (per rank for
// AllGather and ReduceScatter) on every rank and checks every element of
// every rank's output.
func (w *world) collective(t *testing.T, rng *rand.Rand, kind algo.Kind, count, root int, inPlace bool) {
	t.Helper()
	n := len(w.engines)
	op := engine.Op{Kind: kind, Count: count, Type: gccl.Int32, Op: gccl.Sum, Root: root}
	sendN, recvN := op.Sizes(n)
	sends, recvs := make([][]byte, n), make([][]byte, n)
	for r := range n {
		o := op
		o.Stream = w.streams[r]
		rp, rb := w.alloc(t, r, recvN, rng)
		sp, sb := w.alloc(t, r, sendN, rng)
		if inPlace { // NCCL's in-place: the send buffer is the rank's block of the larger one
			switch {
			case kind == algo.AllGather:
				sp, sb = rp+uintptr(r*sendN), rb[r*sendN:(r+1)*sendN]
			case kind == algo.ReduceScatter:
				rp, rb = sp+uintptr(r*recvN), sb[r*recvN:(r+1)*recvN]
			default:
				rp, rb = sp, sb
			}
		}
		smallInts(sb, rng)
		sends[r], recvs[r] = append([]byte(nil), sb...), rb
		o.Send, o.Recv = sp, rp
		require.NoError(t, w.engines[r].Launch([]engine.Op{o}))
	}
	w.sync(t)
	sum := func(i int) (s int32) {
		for r := range n {
			s += i32(sends[r], i)
		}
		return s
	}
	for r := range n {
		if kind == algo.Reduce && r != root {
			continue
		}
		for i := range recvN / 4 {
			var want int32
			switch kind {
			case algo.AllReduce, algo.Reduce:
				want = sum(i)
			case algo.ReduceScatter:
				want = sum(r*count + i)
			case algo.AllGather:
				want = i32(sends[i/count], i%count)
			case algo.Broadcast:
				want = i32(sends[root], i)
			}
			require.Equal(t, want, i32(recvs[r], i), "%v count=%d inplace=%v rank %d elem %d", kind, count, inPlace, r, i)
		}
	}
}
