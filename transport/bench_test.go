package transport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkBandwidth measures one-direction bandwidth between two goroutine
// ranks over each transport; b.SetBytes makes "go test -bench" print MB/s.
func BenchmarkBandwidth(b *testing.B) {
	for _, m := range modes {
		for _, size := range []int{64 << 10, 4 << 20} {
			b.Run(m.name+"/"+sizeName(size), func(b *testing.B) { benchPair(b, m, size) })
		}
	}
}

// BenchmarkLatency measures the round trip of a small message between two
// goroutine ranks over each transport (ping-pong: one op is a message there
// and one back).
func BenchmarkLatency(b *testing.B) {
	for _, m := range modes {
		for _, size := range []int{8, 1 << 10} {
			b.Run(m.name+"/"+sizeName(size), func(b *testing.B) { benchPingPong(b, m, size) })
		}
	}
}

func benchPingPong(b *testing.B, m mode, size int) {
	eps, infos := benchEndpoints(b, m)
	ctx := context.Background()
	s0, r0, err := eps[0].Connect(ctx, infos[1], 0)
	require.NoError(b, err)
	s1, r1, err := eps[1].Connect(ctx, infos[0], 0)
	require.NoError(b, err)
	msg := make([]byte, size)
	errc := make(chan error, 1)
	nop := func([]byte) error { return nil }
	go func() {
		for range b.N {
			if err := r1.Recv(ctx, Expect(size), nop); err != nil {
				errc <- err
				return
			}
			if err := s1.Send(ctx, Desc{}, msg); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		require.NoError(b, s0.Send(ctx, Desc{}, msg))
		require.NoError(b, r0.Recv(ctx, Expect(size), nop))
	}
	require.NoError(b, <-errc)
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// benchEndpoints opens two ranks' endpoints, on one "host" for shm, on two
// for net.
func benchEndpoints(b *testing.B, m mode) ([2]*Endpoint, [2]PeerInfo) {
	dir := b.TempDir()
	var eps [2]*Endpoint
	var infos [2]PeerInfo
	for r := range 2 {
		cfg := Config{Rank: r, CommID: [16]byte{1}, Secret: [16]byte{2}, IfName: "lo", ShmDir: dir, Timeout: time.Minute}
		if !m.shm {
			cfg.HostHash = uint64(100 + r)
		}
		ep, err := Listen(cfg)
		require.NoError(b, err)
		b.Cleanup(func() { ep.Close() })
		eps[r], infos[r] = ep, ep.Info()
	}
	return eps, infos
}

func benchPair(b *testing.B, m mode, size int) {
	eps, infos := benchEndpoints(b, m)
	ctx := context.Background()
	send, _, err := eps[0].Connect(ctx, infos[1], 0)
	require.NoError(b, err)
	_, recv, err := eps[1].Connect(ctx, infos[0], 0)
	require.NoError(b, err)
	src := make([]byte, size)
	dst := make([]byte, size)
	errc := make(chan error, 1)
	b.SetBytes(int64(size))
	b.ResetTimer()
	go func() {
		for range b.N {
			if err := send.Send(ctx, Desc{}, src); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range b.N {
		off := 0
		require.NoError(b, recv.Recv(ctx, Expect(size), func(p []byte) error { off += copy(dst[off:], p); return nil }))
	}
	require.NoError(b, <-errc)
}
