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

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

func benchPair(b *testing.B, m mode, size int) {
	dir := b.TempDir()
	var eps [2]*Endpoint
	var infos [2]PeerInfo
	for r := range 2 {
		cfg := Config{Rank: r, IfName: "lo", ShmDir: dir, Timeout: time.Minute}
		if !m.shm {
			cfg.HostHash = uint64(100 + r)
		}
		ep, err := Listen(cfg)
		require.NoError(b, err)
		defer ep.Close()
		eps[r], infos[r] = ep, ep.Info()
	}
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
