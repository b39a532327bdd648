package ucx

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/gccl/gccl/internal/ucx"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// TestMain runs the tests over UCX's TCP transport (unless UCX_TLS says
// otherwise) and warms libucs up before the leak check's snapshot: its
// process-wide descriptors (the async thread's event set) live from the
// first context to the end of the process.
func TestMain(m *testing.M) {
	if _, set := os.LookupEnv("UCX_TLS"); !set {
		_ = os.Setenv("UCX_TLS", "tcp")
	}
	if ucx.Load() == nil {
		if c, err := ucx.NewContext(); err == nil {
			if w, err := c.NewWorker(); err == nil {
				w.Close()
			}
			c.Close()
		}
	}
	leakcheck.Main(m)
}

// requireUCX skips only when libucp.so.0 is genuinely absent.
func requireUCX(t testing.TB) {
	t.Helper()
	if err := ucx.Load(); err != nil {
		require.ErrorIs(t, err, ucx.ErrNoLibrary)
		t.Skipf("UCX is not installed here: %v", err)
	}
}

func configs() (network.Config, network.Config) {
	l := network.Config{Rank: 0, Timeout: 20 * time.Second}
	l.CommID[0], l.Secret[0] = 7, 9
	c := l
	c.Rank = 1
	return l, c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pair connects rank 1 to rank 0 on channel over a new listener (listen);
// the test's cleanup closes both ends, then the listener, each without
// error.
func pair(t testing.TB, p network.Provider, channel int) (network.SendComm, network.RecvComm) {
	t.Helper()
	l, cc := listen(t, p)
	s, r := connect(t, p, l, cc, channel)
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.NoError(t, r.Close())
	})
	return s, r
}

// listen opens rank 0's listener on p, which the test's cleanup closes
// (without error, after the test's own Closes: a second Close is a
// no-op), and returns it with the configuration rank 1 connects with.
func listen(t testing.TB, p network.Provider) (network.Listener, network.Config) {
	t.Helper()
	lc, cc := configs()
	l, err := p.Listen(0, lc)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l, cc
}

// connect connects rank 1 to l on channel and accepts the connection;
// the caller closes both ends.
func connect(t testing.TB, p network.Provider, l network.Listener, cc network.Config, channel int) (network.SendComm, network.RecvComm) {
	t.Helper()
	s, err := p.Connect(testCtx(t), 0, l.Handle(), cc, channel)
	require.NoError(t, err)
	r, err := l.Accept(testCtx(t), network.Peer{Rank: 1, Channel: channel})
	require.NoError(t, err)
	return s, r
}

// buffer is pinned, registered host memory of a connection.
type buffer struct {
	b []byte
	m network.MemHandle
}

func newBuffer(t testing.TB, c network.Comm, n int) buffer {
	t.Helper()
	b := make([]byte, n) // Go never moves heap objects; a Pinner is for C keeping pointers, which the provider does itself
	m, err := c.Register(network.HostRegion(b))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Deregister(m)) })
	return buffer{b, m}
}

func (b buffer) region(n int) network.Region { return network.HostRegion(b.b).Slice(0, n) }

// finish tests the requests (each Test progresses its side) until all
// are done or 20 s pass; it returns their sizes and first error.
func finish(t testing.TB, reqs ...network.Request) ([]int, error) {
	t.Helper()
	n := make([]int, len(reqs))
	done := make([]bool, len(reqs))
	deadline := time.Now().Add(20 * time.Second)
	for left := len(reqs); left > 0; {
		if time.Now().After(deadline) {
			return n, gccl.Errorf(gccl.TimeoutError, "test", "%d requests not done", left)
		}
		for i, r := range reqs {
			if done[i] {
				continue
			}
			d, got, err := r.Test()
			if err != nil {
				return n, err
			}
			if d {
				done[i], n[i] = true, got
				left--
			}
		}
	}
	return n, nil
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
