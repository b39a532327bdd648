package fault_test

import (
	"context"
	"math/rand/v2"
	gonet "net"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/nettest"
	tfault "github.com/gccl/gccl/transport/fault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireFaultsNeverDelivered sends random messages over the TCP
// transport with faults injected below its framing (one bit flipped, a
// write dropped, the socket closed mid-stream), seeded. Whatever fires,
// every byte handed to the receiver's consumer must be the byte that was
// sent at that position, and the first fault must end the stream with an
// error (a corrupted frame is reported, never delivered). Flipped bits
// and dropped writes (which TCP itself never lets through) need payload
// checksums on; a stream cut short is an error without them too.
func TestWireFaultsNeverDelivered(t *testing.T) {
	cases := []struct {
		name     string
		cfg      tfault.Config
		checksum bool
	}{
		{"corrupt", tfault.Config{Corrupt: 0.05}, true},
		{"drop", tfault.Config{Drop: 0.05}, true},
		{"close", tfault.Config{Close: 0.05}, true},
		{"close, no checksum", tfault.Config{Close: 0.05}, false},
		{"all", tfault.Config{Corrupt: 0.02, Drop: 0.02, Close: 0.02, Delay: 0.1}, true},
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= 8; seed++ {
			cfg := tc.cfg
			cfg.Seed = seed
			faultyStream(t, tc.name, cfg, tc.checksum)
		}
	}
}

func faultyStream(t *testing.T, name string, cfg tfault.Config, checksum bool) {
	const nsocks, maxMsg, msgs = 3, 300000, 64 // messages inline on the control socket and in pieces
	out, in := nettest.TCPPairs(t, nsocks)
	wrapped := make([]gonet.Conn, nsocks)
	injectors := make([]*tfault.NetConn, nsocks)
	for i := range out {
		c := cfg
		c.Seed = cfg.Seed*31 + uint64(i)
		injectors[i] = tfault.WrapNet(out[i], c)
		wrapped[i] = injectors[i]
	}
	stream := tfault.NewStream(t, wrapped, in, checksum)
	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	sent := make([][]byte, msgs)
	for i := range sent {
		sent[i] = nettest.RandBytes(rng, rng.IntN(maxMsg+1))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, m := range sent {
			if stream.Send(context.Background(), m, uint32(i)) != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	delivered, failed := 0, error(nil)
	for i, m := range sent {
		got, err := stream.Recv(ctx, len(m), uint32(i))
		if err != nil {
			failed = err
			break
		}
		require.Equal(t, m, got, "%s seed %d: message %d delivered corrupted", name, cfg.Seed, i)
		delivered++
	}
	stream.Close()
	wg.Wait()
	var st tfault.Stats
	for _, in := range injectors {
		x := in.Stats()
		st.Corruptions += x.Corruptions
		st.Drops += x.Drops
		st.Closes += x.Closes
	}
	fired := st.Corruptions + st.Drops + st.Closes
	if failed == nil {
		assert.Zero(t, fired, "%s seed %d: %+v faults fired but all %d messages arrived intact", name, cfg.Seed, st, msgs)
		return
	}
	assert.NotZero(t, fired, "%s seed %d: failed with no fault injected: %v", name, cfg.Seed, failed)
	// A checksum or framing failure is a SystemError ("data was corrupted
	// in transit"), a cut stream a RemoteError, a frame that never comes
	// (a dropped write) a checksum failure or, at worst, the deadline.
	code := gccl.Code(failed)
	assert.Contains(t, []gccl.Result{gccl.SystemError, gccl.RemoteError, gccl.TimeoutError}, code, "%s seed %d: %v", name, cfg.Seed, failed)
	t.Logf("%s seed %d: %d/%d messages delivered, then %v (faults %+v)", name, cfg.Seed, delivered, msgs, failed, st)
}
