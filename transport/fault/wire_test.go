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
	"github.com/gccl/gccl/transport"
	tfault "github.com/gccl/gccl/transport/fault"
	tnet "github.com/gccl/gccl/transport/internal/net"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireFaultsNeverDelivered sends random messages over the TCP
// transport with faults injected below its framing (one bit flipped, a
// write dropped, the socket closed mid-stream), seeded. Whatever fires,
// every byte handed to the receiver's consumer must be the byte that was
// sent at that position, and the first fault must end the stream with an
// error (a corrupted frame is reported, never delivered).
func TestWireFaultsNeverDelivered(t *testing.T) {
	cases := []struct {
		name string
		cfg  tfault.Config
	}{
		{"corrupt", tfault.Config{Corrupt: 0.05}},
		{"drop", tfault.Config{Drop: 0.05}},
		{"close", tfault.Config{Close: 0.05}},
		{"all", tfault.Config{Corrupt: 0.02, Drop: 0.02, Close: 0.02, Delay: 0.1}},
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= 8; seed++ {
			cfg := tc.cfg
			cfg.Seed = seed
			faultyStream(t, tc.name, cfg)
		}
	}
}

func faultyStream(t *testing.T, name string, cfg tfault.Config) {
	const nsocks, chunk, msgs = 2, 4096, 64
	out, in := nettest.TCPPairs(t, nsocks)
	wrapped := make([]gonet.Conn, nsocks)
	injectors := make([]*tfault.NetConn, nsocks)
	for i := range out {
		c := cfg
		c.Seed = cfg.Seed*31 + uint64(i)
		injectors[i] = tfault.WrapNet(out[i], c)
		wrapped[i] = injectors[i]
	}
	opts := tnet.Options{ChunkSize: chunk, Timeout: 2 * time.Second}
	s, err := tnet.NewSender(wrapped, opts)
	require.NoError(t, err)
	r, err := tnet.NewReceiver(in, opts)
	require.NoError(t, err)
	defer s.Close()
	defer r.Close()

	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	sent := make([][]byte, msgs)
	for i := range sent {
		sent[i] = make([]byte, 1+rng.IntN(5*chunk))
		for j := range sent[i] {
			sent[i][j] = byte(rng.UintN(256))
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, m := range sent {
			if s.Send(context.Background(), transport.Desc{}, m) != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	delivered, failed := 0, error(nil)
	for i, m := range sent {
		off := 0
		err := r.Recv(ctx, transport.Expect(len(m)), func(p []byte) error {
			require.Equal(t, m[off:off+len(p)], p, "%s seed %d: message %d bytes %d.. delivered corrupted", name, cfg.Seed, i, off)
			off += len(p)
			return nil
		})
		if err != nil {
			failed = err
			break
		}
		delivered++
	}
	_ = s.Close()
	_ = r.Close()
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
