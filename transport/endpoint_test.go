package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// mode selects the transport a test world uses.
type mode struct {
	name string
	shm  bool
}

var modes = []mode{{"shm", true}, {"net", false}}

// world is n in-process ranks, each with its own endpoint.
type world struct {
	eps   []*Endpoint
	infos []PeerInfo
}

func newWorld(t *testing.T, n int, m mode, tweak func(*Config)) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{}
	for r := range n {
		cfg := Config{Rank: r, CommID: [16]byte{1, 2, 3}, Secret: [16]byte{9, 8, 7}, ShmDir: dir,
			IfName: "lo", Timeout: 10 * time.Second, ShmSlotSize: 8 << 10, ShmSlots: 4, NetChunkSize: 16 << 10}
		if !m.shm {
			cfg.HostHash = uint64(1000 + r) // every rank on its own "host"
		}
		if tweak != nil {
			tweak(&cfg)
		}
		ep, err := Listen(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { ep.Close() })
		w.eps = append(w.eps, ep)
		w.infos = append(w.infos, roundTripInfo(t, ep.Info()))
	}
	return w
}

// roundTripInfo passes a PeerInfo through its wire form, as the bootstrap does.
func roundTripInfo(t *testing.T, p PeerInfo) PeerInfo {
	b, err := p.MarshalBinary()
	require.NoError(t, err)
	var q PeerInfo
	require.NoError(t, q.UnmarshalBinary(b))
	require.Equal(t, p, q)
	return q
}

type link struct{ send, recv Conn }

// connectAll connects every rank to every other on nch channels; each rank
// walks its peers in its own random order, concurrently with the others.
func (w *world) connectAll(t *testing.T, nch int) [][][]link {
	n := len(w.eps)
	links := make([][][]link, n) // [rank][peer][channel]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		links[r] = make([][]link, n)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 77))
			for _, p := range rng.Perm(n) {
				if p == r {
					continue
				}
				links[r][p] = make([]link, nch)
				for _, c := range rng.Perm(nch) {
					s, rc, err := w.eps[r].Connect(ctx, w.infos[p], c)
					if err != nil {
						errs[r] = err
						return
					}
					links[r][p][c] = link{s, rc}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return links
}

// payload is the deterministic random message from rank a to rank b on
// channel c in round i.
func payload(a, b, c, i, size int) []byte {
	rng := rand.New(rand.NewPCG(uint64(a*1000+b), uint64(c*1000+i)))
	p := make([]byte, size+8)
	for k := 0; k < size; k += 8 {
		binary.LittleEndian.PutUint64(p[k:], rng.Uint64())
	}
	return p[:size]
}

func TestAllPairsAllChannels(t *testing.T) {
	exchange(t, 4, 2, []int{0, 1, 7, 4095, 8 << 10, 8<<10 + 1, 100003, 300007})
}

func TestEightRanks(t *testing.T) {
	exchange(t, 8, 1, []int{0, 1, 1000, 33333})
}

func TestLargeMessages(t *testing.T) {
	exchange(t, 2, 1, []int{3<<20 + 3, 1, 4 << 20})
}

// exchange runs n ranks over nch channels; every rank sends the messages of
// the given sizes to every other on every channel, all at once, in both
// directions, and every byte received is checked.
func exchange(t *testing.T, n, nch int, sizes []int) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t, n, m, nil)
			links := w.connectAll(t, nch)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errc := make(chan error, 2*n*n*nch)
			for a := range n {
				for b := range n {
					if a == b {
						continue
					}
					for c := range nch {
						wg.Go(func() {
							for i, sz := range sizes {
								if err := links[a][b][c].send.Send(ctx, Desc{}, payload(a, b, c, i, sz)); err != nil {
									errc <- err
									return
								}
							}
						})
						wg.Go(func() { errc <- recvCheck(ctx, links[b][a][c].recv, a, b, c, sizes) })
					}
				}
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				require.NoError(t, err)
			}
		})
	}
}

// recvCheck receives the messages a sent to b on channel c, one Recv per
// message, and checks every byte.
func recvCheck(ctx context.Context, r Conn, a, b, c int, sizes []int) error {
	var want []byte
	for i, sz := range sizes {
		want = append(want, payload(a, b, c, i, sz)...)
	}
	got := make([]byte, 0, len(want))
	for _, sz := range sizes {
		if err := r.Recv(ctx, Expect(sz), func(p []byte) error { got = append(got, p...); return nil }); err != nil {
			return err
		}
	}
	if !bytes.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				return fmt.Errorf("%d->%d ch %d: byte %d is %#x, want %#x", a, b, c, i, got[i], want[i])
			}
		}
	}
	return nil
}

func TestTransportChoice(t *testing.T) {
	w := newWorld(t, 2, modes[0], nil)
	require.True(t, w.eps[0].UsesShm(w.infos[1]))
	links := w.connectAll(t, 1)
	require.IsType(t, "", fmt.Sprintf("%T", links[0][1][0].send))
	require.Contains(t, fmt.Sprintf("%T", links[0][1][0].send), "shm.")

	// SHM disabled on one side: both sides fall back to sockets.
	w2 := newWorld(t, 2, modes[0], func(c *Config) { c.ShmDisable = c.Rank == 1 })
	require.False(t, w2.eps[0].UsesShm(w2.infos[1]))
	require.False(t, w2.eps[1].UsesShm(w2.infos[0]))
	links2 := w2.connectAll(t, 1)
	require.IsType(t, &netSend{}, links2[0][1][0].send)
	ctx := context.Background()
	require.NoError(t, links2[0][1][0].send.Send(ctx, Desc{}, []byte("hello")))
	var got []byte
	require.NoError(t, links2[1][0][0].recv.Recv(ctx, Expect(5), func(p []byte) error { got = append(got, p...); return nil }))
	require.Equal(t, "hello", string(got))

	t.Cleanup(func() { reloadEnv() }) // runs after Setenv's own cleanup restored the variable
	t.Setenv("GCCL_SHM_DISABLE", "1")
	reloadEnv()
	w3 := newWorld(t, 1, modes[0], nil)
	require.Empty(t, w3.infos[0].ShmPrefix)
}

func TestPeerCloseAndDeadlines(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t, 2, m, nil)
			links := w.connectAll(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := links[1][0][0].recv.Recv(ctx, Expect(10), func([]byte) error { return nil })
			require.ErrorIs(t, err, gccl.ErrTimeout)
			require.Less(t, time.Since(start), 3*time.Second)

			require.NoError(t, w.eps[0].Close())
			ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel2()
			err = links[1][0][0].recv.Recv(ctx2, Expect(10), func([]byte) error { return nil })
			require.ErrorIs(t, err, gccl.ErrRemote)
			// Sends to a closed peer fail too (sockets may need a few writes to notice).
			for range 100 {
				if err = links[1][0][0].send.Send(ctx2, Desc{}, make([]byte, 64<<10)); err != nil {
					break
				}
				time.Sleep(time.Millisecond)
			}
			require.ErrorIs(t, err, gccl.ErrRemote)
		})
	}
}

func TestEndpointMisuse(t *testing.T) {
	w := newWorld(t, 2, modes[1], nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := w.eps[0].Connect(ctx, w.infos[1], -1)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, _, err = w.eps[0].Connect(ctx, PeerInfo{Rank: 1, NetName: "socket", NetHandle: []byte("nonsense")}, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, _, err = w.eps[0].Connect(ctx, PeerInfo{Rank: 1, NetName: "socket", NetHandle: w.infos[1].NetHandle, ShmPrefix: "../etc"}, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	w.connectAll(t, 1)
	_, _, err = w.eps[0].Connect(ctx, w.infos[1], 0)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.NoError(t, w.eps[0].Close())
	require.NoError(t, w.eps[0].Close())
	_, _, err = w.eps[0].Connect(ctx, w.infos[1], 1)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	var nilEP *Endpoint
	require.NoError(t, nilEP.Close())

	_, err = Listen(Config{Rank: -1})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = Listen(Config{Rank: 0, CommID: [16]byte{1}, Secret: [16]byte{2}, IfName: "=no-such-interface"})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	require.Contains(t, err.Error(), "interface")
	for _, cfg := range []Config{{}, {CommID: [16]byte{1}}, {Secret: [16]byte{2}}} {
		_, err = Listen(cfg)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "%+v", cfg)
		require.Contains(t, err.Error(), "CommID or Secret is zero")
	}
}

func TestWrongSecretRejected(t *testing.T) {
	w := newWorld(t, 1, modes[1], nil)
	for _, tweak := range []func(*Config){
		func(c *Config) { c.Secret[0] ^= 1 },
		func(c *Config) { c.CommID[15] ^= 0x80 },
	} {
		bad := newWorld(t, 1, modes[1], func(c *Config) { c.Rank, c.HostHash = 1, 5555; tweak(c) })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, err := bad.eps[0].Connect(ctx, w.infos[0], 0)
		cancel()
		require.ErrorIs(t, err, gccl.ErrRemote)
		// The victim never sees the intruder's sockets.
		ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err = w.eps[0].ln.Accept(ctx2, network.Peer{Rank: 1, Channel: 0})
		cancel2()
		require.ErrorIs(t, err, gccl.ErrTimeout)
	}
}

func TestShmFilesUnlinkedOnClose(t *testing.T) {
	w := newWorld(t, 3, modes[0], nil)
	w.connectAll(t, 2)
	for _, ep := range w.eps {
		require.NoError(t, ep.Close())
	}
	ents, err := os.ReadDir(w.eps[0].cfg.ShmDir)
	require.NoError(t, err)
	require.Empty(t, ents, "ring files left behind")
}

func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, m := range modes {
		w := newWorld(t, 3, m, nil)
		links := w.connectAll(t, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// Bind some receive sides, leave others unbound.
		require.NoError(t, links[1][0][0].send.Send(ctx, Desc{}, []byte{1}))
		require.NoError(t, links[0][1][0].recv.Recv(ctx, Expect(1), func([]byte) error { return nil }))
		require.NoError(t, links[2][1][1].recv.(interface{ Bind(context.Context) error }).Bind(ctx))
		cancel()
		for _, ep := range w.eps {
			require.NoError(t, ep.Close())
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left after Close")
}
