package networktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// Timeout bounds every wait of the suite.
const Timeout = 20 * time.Second

// Run runs the conformance suite, with a new provider from newProvider in
// each subtest. The subtests run one after another (the leak check counts
// the process's goroutines and file descriptors).
func Run(t *testing.T, newProvider func() network.Provider) {
	tests := []struct {
		name string
		run  func(t *testing.T, p network.Provider)
	}{
		{"Devices", testDevices},
		{"AnyOrder", testAnyOrder},
		{"Transfers", testTransfers},
		{"InFlight", testInFlight},
		{"WrongIdentity", testWrongIdentity},
		{"Reject", testReject},
		{"PeerClose", testPeerClose},
		{"SendThenClose", testSendThenClose},
		{"Deadlines", testDeadlines},
		{"BadRegions", testBadRegions},
		{"CloseReleases", testCloseReleases},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := leakcheck.Take()
			t.Cleanup(func() { // runs after the subtest's other cleanups closed everything
				if leaks := before.Leaks(leakcheck.Grace); len(leaks) > 0 && !t.Failed() {
					t.Errorf("left behind after Close:\n%s", strings.Join(leaks, "\n"))
				}
			})
			tc.run(t, newProvider())
		})
	}
}

// Ranks of the suite: rank 0 listens, rank 1 connects.
const listenRank, connectRank = 0, 1

// configs returns the two ranks' configs, of one random communicator.
func configs() (listen, connect network.Config) {
	var c network.Config
	_, _ = rand.Read(c.CommID[:])
	_, _ = rand.Read(c.Secret[:])
	c.Timeout = Timeout
	listen, connect = c, c
	listen.Rank, connect.Rank = listenRank, connectRank
	return listen, connect
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return c
}

// listen opens rank 0's listener on device 0.
func listen(t *testing.T, p network.Provider, cfg network.Config) network.Listener {
	t.Helper()
	devs, err := p.Devices()
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	ln, err := p.Listen(0, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	h := ln.Handle()
	require.NotEmpty(t, h)
	require.LessOrEqual(t, len(h), network.MaxHandleSize)
	return ln
}

// pair connects rank 1 to rank 0 on channel: the sending and receiving ends.
func pair(t *testing.T, p network.Provider, channel int) (network.SendComm, network.RecvComm) {
	t.Helper()
	lcfg, ccfg := configs()
	ln := listen(t, p, lcfg)
	s, err := p.Connect(ctx(t), 0, ln.Handle(), ccfg, channel)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	r, err := ln.Accept(ctx(t), network.Peer{Rank: connectRank, Channel: channel})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return s, r
}

// buffer is pinned Go memory registered with a connection.
type buffer struct {
	b []byte
	m network.MemHandle
}

func newBuffer(t *testing.T, c network.Comm, n int) buffer {
	t.Helper()
	b := make([]byte, n)
	var pin runtime.Pinner
	if n > 0 {
		pin.Pin(&b[0])
	}
	m, err := c.Register(network.HostRegion(b))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Deregister(m)
		pin.Unpin()
	})
	return buffer{b, m}
}

func (b buffer) region(n int) network.Region { return network.HostRegion(b.b).Slice(0, n) }

// post retries a post until the provider takes it.
func post(t *testing.T, f func() (network.Request, error)) network.Request {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		r, err := f()
		require.NoError(t, err)
		if r != nil {
			return r
		}
		require.True(t, time.Now().Before(deadline), "the provider took no request for %v", Timeout)
		time.Sleep(100 * time.Microsecond)
	}
}

// finish waits for r (Wait where the provider has it, else Test in a
// loop) within ctx.
func finish(ctx context.Context, r network.Request) (int, error) {
	if w, ok := r.(network.Waiter); ok {
		return w.Wait(ctx)
	}
	for {
		done, n, err := r.Test()
		if done || err != nil {
			return n, err
		}
		select {
		case <-ctx.Done():
			return 0, gccl.Errorf(gccl.TimeoutError, "request", "not done: %v", ctx.Err())
		case <-time.After(50 * time.Microsecond):
		}
	}
}

func randBytes(seed uint64, n int) []byte {
	rng := mrand.New(mrand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// requireGcclError fails unless err is a *gccl.Error.
func requireGcclError(t *testing.T, err error, msg string) {
	t.Helper()
	require.Error(t, err, msg)
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "%s: %v is not a *gccl.Error", msg, err)
}

func requireBytes(t *testing.T, want, got []byte, what string) {
	t.Helper()
	if !bytes.Equal(want, got) {
		i := 0
		for i < min(len(want), len(got)) && want[i] == got[i] {
			i++
		}
		t.Fatalf("%s: %d bytes received, %d sent; first difference at byte %d", what, len(got), len(want), i)
	}
}
