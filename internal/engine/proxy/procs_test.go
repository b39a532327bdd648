package proxy_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// peerEnv carries, to the process TestPingPongPeer runs in, what
// BenchmarkPingPongProcesses's rank 0 tells its peer: the communicator's
// ID and secret, rank 0's listener, the slot size and the round trips.
const peerEnv = "GCCL_PROXY_TEST_PEER"

// BenchmarkPingPongProcesses is BenchmarkPingPong with rank 1 in a process
// of its own (this test binary again, running TestPingPongPeer), as ranks
// on a GPU machine are: each proxy is alone in its process, so it is not
// crowded unless GOMAXPROCS is 1 (see hotKernels for how the kernels wait).
func BenchmarkPingPongProcesses(b *testing.B) {
	for _, size := range pingSizes {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) { pingPongProcesses(b, size) })
	}
}

// hotKernels says whether the two processes' kernels may poll without
// sleeping: with 4 CPUs or more, each process's proxy and kernel have one
// each, as on a GPU machine; with fewer, four polling threads would share
// them and the OS's time slices would be the round trip (on 2 CPUs: about
// 0.25 ms against 0.05 with sleeping kernels), so they sleep as
// gpu.pause does.
func hotKernels() bool { return runtime.NumCPU() >= 4 }

func pingPongProcesses(b *testing.B, size int) {
	const warm = 20
	c := newNetConfig()
	w := &world{ranks: []*rank{newRank(b, 0, c, proxy.Config{})}}
	b.Cleanup(func() {
		require.NoError(b, w.ranks[0].p.Close())
		require.NoError(b, w.ranks[0].ln.Close())
		for _, p := range w.pins {
			p.Unpin()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPingPongPeer$", "-test.v")
	cmd.Env = append(os.Environ(), peerEnv+"="+strings.Join([]string{
		hex.EncodeToString(c.CommID[:]), hex.EncodeToString(c.Secret[:]),
		hex.EncodeToString(w.ranks[0].ln.Handle()), strconv.Itoa(size), strconv.Itoa(warm + b.N),
	}, ":"))
	out, err := cmd.StdoutPipe()
	require.NoError(b, err)
	cmd.Stderr = os.Stderr
	require.NoError(b, cmd.Start())
	lines := bufio.NewScanner(out)
	var peer network.Handle
	for peer == nil && lines.Scan() {
		if h, ok := strings.CutPrefix(lines.Text(), "handle "); ok {
			peer, err = hex.DecodeString(h)
			require.NoError(b, err)
		}
	}
	require.NotNil(b, peer, "the peer process printed no handle")
	go func() { // the rest of its output, so that it never blocks on the pipe
		for lines.Scan() {
		}
	}()

	sc, err := w.ranks[0].prov.Connect(ctx, 0, peer, w.ranks[0].cfg, 0)
	require.NoError(b, err)
	rc, err := w.ranks[0].ln.Accept(ctx, network.Peer{Rank: 1, Channel: 0})
	require.NoError(b, err)
	send, recv := w.fifo(b, 4096), w.fifo(b, 4096)
	require.NoError(b, w.ranks[0].p.AddSend(send, sc, proxy.Label{Peer: 1}))
	require.NoError(b, w.ranks[0].p.AddRecv(recv, rc, proxy.Label{Peer: 1}))

	st := stream{seed: 3, slotBytes: size, full: true}
	g := w.gpu(0, nil)
	g.hot = hotKernels()
	w.kick()
	require.NoError(b, g.pingPong(send, recv, st, warm, true))
	g.times = g.times[:0]
	b.ResetTimer()
	w.kick()
	require.NoError(b, g.pingPong(send, recv, st, b.N, true))
	b.StopTimer()
	reportRoundTrip(b, g)
	require.NoError(b, cmd.Wait(), "the peer process")
}

// TestPingPongPeer is rank 1 of BenchmarkPingPongProcesses, run in a
// process of its own; it is skipped unless peerEnv says what to do.
func TestPingPongPeer(t *testing.T) {
	arg := os.Getenv(peerEnv)
	if arg == "" {
		t.Skip("run by BenchmarkPingPongProcesses")
	}
	f := strings.Split(arg, ":")
	require.Len(t, f, 5, "%s=%s", peerEnv, arg)
	c := newNetConfig()
	id, err := hex.DecodeString(f[0])
	require.NoError(t, err)
	secret, err := hex.DecodeString(f[1])
	require.NoError(t, err)
	copy(c.CommID[:], id)
	copy(c.Secret[:], secret)
	peer, err := hex.DecodeString(f[2])
	require.NoError(t, err)
	size, err := strconv.Atoi(f[3])
	require.NoError(t, err)
	n, err := strconv.Atoi(f[4])
	require.NoError(t, err)

	w := &world{ranks: []*rank{newRank(t, 1, c, proxy.Config{})}}
	rk := w.ranks[0]
	defer func() {
		require.NoError(t, rk.p.Close())
		require.NoError(t, rk.ln.Close())
		for _, p := range w.pins {
			p.Unpin()
		}
	}()
	fmt.Printf("handle %s\n", hex.EncodeToString(rk.ln.Handle()))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sc, err := rk.prov.Connect(ctx, 0, peer, rk.cfg, 0)
	require.NoError(t, err)
	rc, err := rk.ln.Accept(ctx, network.Peer{Rank: 0, Channel: 0})
	require.NoError(t, err)
	send, recv := w.fifo(t, 4096), w.fifo(t, 4096)
	require.NoError(t, rk.p.AddSend(send, sc, proxy.Label{Peer: 0}))
	require.NoError(t, rk.p.AddRecv(recv, rc, proxy.Label{Peer: 0}))
	g := &gpu{status: &rk.status, deadline: time.Now().Add(wait), hot: hotKernels()}
	rk.p.Kick()
	require.NoError(t, g.pingPong(send, recv, stream{seed: 3, slotBytes: size, full: true}, n, false))
}
