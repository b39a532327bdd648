package p2p_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/require"
)

// buf is one rank's buffer: its pointer and host view.
type buf struct {
	p uintptr
	b []byte
}

func alloc(t *testing.T, w *colltest.World, n int, rng *rand.Rand) []buf {
	bs := make([]buf, w.N())
	for r := range bs {
		bs[r].p, bs[r].b = w.Alloc(t, r, n, rng)
	}
	return bs
}

func equal(t *testing.T, got, want []byte, format string, a ...any) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		require.Fail(t, "bytes differ", "%s: first difference at byte %d of %d/%d", fmt.Sprintf(format, a...), i, len(got), len(want))
	}
}

var worlds = []int{2, 3, 4}

func TestSendRecvPairs(t *testing.T) {
	for _, n := range worlds {
		w := colltest.New(t, n, nil)
		rng := rand.New(rand.NewPCG(uint64(n), 10))
		for _, dt := range gccl.DataTypes() {
			for _, count := range []int{0, 1, 1031, 300_007} {
				nb := count * dt.Size()
				src, dst := alloc(t, w, nb, rng), alloc(t, w, nb, rng)
				// Rank r sends to r^1 (pairs); an odd rank out sends to itself in a group.
				for r := range n {
					peer := r ^ 1
					if peer >= n {
						peer = r
					}
					if r < peer {
						require.NoError(t, p2p.Send(w.Comms[r], src[r].p, count, dt, peer, w.Streams[r]))
						require.NoError(t, p2p.Recv(w.Comms[r], dst[r].p, count, dt, peer, w.Streams[r]))
					} else if r > peer {
						require.NoError(t, p2p.Recv(w.Comms[r], dst[r].p, count, dt, peer, w.Streams[r]))
						require.NoError(t, p2p.Send(w.Comms[r], src[r].p, count, dt, peer, w.Streams[r]))
					} else {
						g := group.New()
						g.Send(w.Comms[r], src[r].p, count, dt, r, w.Streams[r])
						g.Recv(w.Comms[r], dst[r].p, count, dt, r, w.Streams[r])
						require.NoError(t, g.End(), "self")
					}
				}
				w.Sync(t)
				for r := range n {
					peer := r ^ 1
					if peer >= n {
						peer = r
					}
					equal(t, dst[r].b, src[peer].b, "n=%d %v count=%d rank %d from %d", n, dt, count, r, peer)
				}
				w.Reset()
			}
		}
	}
}

func TestScatterGather(t *testing.T) {
	for _, n := range worlds {
		w := colltest.New(t, n, nil)
		rng := rand.New(rand.NewPCG(uint64(n), 11))
		for _, count := range []int{0, 1, n - 1, 4099} {
			for root := range n {
				dt := gccl.DataTypes()[(count+root)%12]
				nb := count * dt.Size()
				whole, part := alloc(t, w, n*nb, rng), alloc(t, w, nb, rng)
				for r := range n {
					require.NoError(t, p2p.Scatter(w.Comms[r], whole[r].p, part[r].p, count, dt, root, w.Streams[r]))
				}
				w.Sync(t)
				for r := range n {
					equal(t, part[r].b, whole[root].b[r*nb:(r+1)*nb], "scatter n=%d count=%d root=%d rank %d", n, count, root, r)
				}
				gathered, mine := alloc(t, w, n*nb, rng), alloc(t, w, nb, rng)
				before := bytes.Clone(gathered[(root+1)%n].b)
				for r := range n {
					require.NoError(t, p2p.Gather(w.Comms[r], mine[r].p, gathered[r].p, count, dt, root, w.Streams[r]))
				}
				w.Sync(t)
				for r := range n {
					equal(t, gathered[root].b[r*nb:(r+1)*nb], mine[r].b, "gather n=%d count=%d root=%d block %d", n, count, root, r)
				}
				equal(t, gathered[(root+1)%n].b, before, "gather wrote a non-root recvbuff")
				w.Reset()
			}
		}
	}
}

func TestAllToAll(t *testing.T) {
	for _, n := range append(worlds, 8) {
		w := colltest.New(t, n, nil)
		rng := rand.New(rand.NewPCG(uint64(n), 12))
		for _, count := range []int{0, 1, 777, 70_001} {
			dt := gccl.Float16
			nb := count * dt.Size()
			src, dst := alloc(t, w, n*nb, rng), alloc(t, w, n*nb, rng)
			for r := range n {
				require.NoError(t, p2p.AllToAll(w.Comms[r], src[r].p, dst[r].p, count, dt, w.Streams[r]))
			}
			w.Sync(t)
			for r := range n {
				for j := range n {
					equal(t, dst[r].b[j*nb:(j+1)*nb], src[j].b[r*nb:(r+1)*nb], "n=%d count=%d %d→%d", n, count, j, r)
				}
			}
			w.Reset()
		}
	}
}

// TestAllToAllv: random counts per pair (zeros included), packed
// displacements on the send side and reversed blocks on the receive side.
func TestAllToAllv(t *testing.T) {
	for _, n := range worlds {
		w := colltest.New(t, n, nil)
		rng := rand.New(rand.NewPCG(uint64(n), 13))
		dt := gccl.Int32
		cnt := make([][]int, n) // cnt[i][j]: elements i sends to j
		for i := range cnt {
			cnt[i] = make([]int, n)
			for j := range cnt[i] {
				cnt[i][j] = rng.IntN(3) * rng.IntN(5000)
			}
		}
		sdispl, rdispl, stot, rtot := make([][]int, n), make([][]int, n), make([]int, n), make([]int, n)
		for i := range n {
			sdispl[i], rdispl[i] = make([]int, n), make([]int, n)
			for j := range n {
				sdispl[i][j] = stot[i]
				stot[i] += cnt[i][j]
			}
			for j := n - 1; j >= 0; j-- {
				rdispl[i][j] = rtot[i]
				rtot[i] += cnt[j][i]
			}
		}
		src, dst := make([]buf, n), make([]buf, n)
		for r := range n {
			src[r].p, src[r].b = w.Alloc(t, r, stot[r]*4, rng)
			dst[r].p, dst[r].b = w.Alloc(t, r, rtot[r]*4, rng)
			recvcounts := make([]int, n)
			for j := range n {
				recvcounts[j] = cnt[j][r]
			}
			require.NoError(t, p2p.AllToAllv(w.Comms[r], src[r].p, cnt[r], sdispl[r], dst[r].p, recvcounts, rdispl[r], dt, w.Streams[r]))
		}
		w.Sync(t)
		for r := range n {
			for j := range n {
				got := dst[r].b[rdispl[r][j]*4 : (rdispl[r][j]+cnt[j][r])*4]
				want := src[j].b[sdispl[j][r]*4 : (sdispl[j][r]+cnt[j][r])*4]
				equal(t, got, want, "n=%d %d→%d", n, j, r)
			}
		}
	}
}

func TestNeighborExchange(t *testing.T) {
	for _, n := range worlds {
		w := colltest.New(t, n, nil)
		rng := rand.New(rand.NewPCG(uint64(n), 14))
		const count = 50_001
		src, dst := alloc(t, w, count, rng), alloc(t, w, 2*count, rng)
		peers := func(r int) []int { return []int{(r + n - 1) % n, (r + 1) % n} }
		for r := range n {
			require.NoError(t, p2p.NeighborExchange(w.Comms[r], src[r].p, dst[r].p, count, gccl.Uint8, peers(r), w.Streams[r]))
		}
		w.Sync(t)
		for r := range n {
			for k, p := range peers(r) {
				equal(t, dst[r].b[k*count:(k+1)*count], src[p].b, "n=%d rank %d from %d", n, r, p)
			}
		}
	}
}
