package gpunet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bed is a layout of ranks on hosts.
type bed struct {
	name  string
	hosts []int
}

// beds are the mixed layouts: block-mapped hosts (direct edges inside a
// host, the network across), round-robin mappings (rank r on host r % H:
// the ring, grouped by host, still crosses the network once per host;
// rank order would cross it on every edge) and one host of more ranks
// than the peer-memory kernels address (every edge direct).
var beds = []bed{
	{"2hostsx2", hostsOf(4, 2)},
	{"3hostsx2", hostsOf(6, 2)},
	{"1hostx9", hostsOf(9, 9)},
	{"roundrobin2x2", roundRobin(4, 2)},
	{"roundrobin3x2", roundRobin(6, 3)},
}

// roundRobin is n ranks on h hosts, rank r on host r % h (mpirun's
// --map-by node).
func roundRobin(n, h int) []int {
	hosts := make([]int, n)
	for r := range hosts {
		hosts[r] = r % h
	}
	return hosts
}

// ringOf is the ring order the ranks of hosts must agree on: the hosts'
// hashes (newWorldOn's) through gpuplan.RingOrder.
func ringOf(hosts []int) []int {
	hashes := make([]uint64, len(hosts))
	for r, h := range hosts {
		hashes[r] = uint64(h) + 1
	}
	return gpuplan.RingOrder(hashes)
}

// checkKinds fails unless every rank of w built the ring of ringOf(hosts)
// and every ring connection, and every point-to-point one made so far,
// is direct exactly when both ends are on one host of hosts and p2pOff is
// false.
func checkKinds(t *testing.T, w *world, hosts []int, p2pOff bool) {
	t.Helper()
	want := func(a, b int) edgeKind {
		if !p2pOff && hosts[a] == hosts[b] {
			return edgeDirect
		}
		return edgeNet
	}
	order := ringOf(hosts)
	for r, g := range w.backs {
		require.Equal(t, order, g.order, "rank %d's ring", r)
		p := g.pos[r]
		next, prev := order[(p+1)%w.n], order[(p+w.n-1)%w.n]
		require.Len(t, g.ring, g.nch)
		for c, ch := range g.ring {
			assert.Equal(t, want(r, next), ch.send.kind(), "rank %d channel %d send", r, c)
			assert.Equal(t, want(prev, r), ch.recv.kind(), "rank %d channel %d recv", r, c)
			assert.NotZero(t, ch.send.dev, "rank %d channel %d send", r, c)
			assert.NotZero(t, ch.recv.dev, "rank %d channel %d recv", r, c)
		}
		for p, pc := range g.peers {
			assert.Equal(t, want(r, p), pc.send.kind(), "rank %d peer %d send", r, p)
			assert.Equal(t, want(r, p), pc.recv.kind(), "rank %d peer %d recv", r, p)
		}
	}
}

// TestEdgeKinds: the ring's and the point-to-point pairs' connections are
// direct exactly between ranks of one host, on every bed, and over the
// network with GCCL_P2P_DISABLE; data still moves on both.
func TestEdgeKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, b := range beds {
		t.Run(b.name, func(t *testing.T) {
			w := newWorldOn(t, b.hosts, 8*4096, 2, 30*time.Second, nil)
			checkKinds(t, w, b.hosts, false)
			runColl(t, w, collCase{kind: algo.AllReduce, t: gccl.Int32, op: gccl.Sum, count: 20000}, rng)
			runSendRecv(t, w, rng)
			checkKinds(t, w, b.hosts, false)
		})
	}
	t.Run("GCCL_P2P_DISABLE", func(t *testing.T) {
		t.Cleanup(func() { env.Reload() }) // after Setenv's own cleanup
		t.Setenv("GCCL_P2P_DISABLE", "1")
		env.Reload()
		hosts := hostsOf(4, 2)
		w := newWorldOn(t, hosts, 8*4096, 2, 30*time.Second, nil)
		checkKinds(t, w, hosts, true)
		runColl(t, w, collCase{kind: algo.AllReduce, t: gccl.Float32, op: gccl.Sum, count: 20000}, rng)
		runSendRecv(t, w, rng)
		checkKinds(t, w, hosts, true)
	})
}

// TestRingNetworkEdges: on every bed the built ring crosses the network
// exactly once out of each host (H network edges for H >= 2 hosts, none
// on one host), counted on the connections each rank made, and every
// rank's model input (netEdges) says the same; with GCCL_P2P_DISABLE
// every edge is a network one.
func TestRingNetworkEdges(t *testing.T) {
	count := func(w *world) (sends, recvs int) {
		for _, g := range w.backs {
			if g.ring[0].send.kind() == edgeNet {
				sends++
			}
			if g.ring[0].recv.kind() == edgeNet {
				recvs++
			}
		}
		return sends, recvs
	}
	for _, b := range append(beds, bed{"roundrobin2x4", roundRobin(8, 2)}) {
		t.Run(b.name, func(t *testing.T) {
			w := newWorldOn(t, b.hosts, 8*4096, 1, 30*time.Second, nil)
			hosts := map[int]bool{}
			for _, h := range b.hosts {
				hosts[h] = true
			}
			want := len(hosts)
			if want == 1 {
				want = 0
			}
			sends, recvs := count(w)
			assert.Equal(t, want, sends, "network edges, by their senders")
			assert.Equal(t, want, recvs, "network edges, by their receivers")
			for r, g := range w.backs {
				assert.Equal(t, want, g.netEdges, "rank %d", r)
			}
		})
	}
	t.Run("GCCL_P2P_DISABLE", func(t *testing.T) {
		hosts := roundRobin(4, 2)
		w := newWorldOn(t, hosts, 8*4096, 1, 30*time.Second, []bool{true, true, true, true})
		sends, recvs := count(w)
		assert.Equal(t, 4, sends)
		assert.Equal(t, 4, recvs)
		checkKinds(t, w, hosts, true)
	})
}

// TestP2PDisableDisagree: ranks of one host that disagree on
// GCCL_P2P_DISABLE would disagree on how they connect: every rank's Open
// fails with gccl.ErrInvalidUsage, none hangs.
func TestP2PDisableDisagree(t *testing.T) {
	start := time.Now()
	_, errs := openWorld(t, hostsOf(3, 3), 8*4096, 2, 10*time.Second, []bool{false, true, false})
	for r, err := range errs {
		assert.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank %d", r)
	}
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestHierCollectives: every collective on every bed, int, float and
// 16-bit types, several operators (avg and premulsum included), counts
// 0, 1, 7, 1000 in and out of place with slots small enough that the data
// crosses slots, and 1000003 elements on larger slots; random inputs,
// poisoned outputs, every element checked (runColl).
func TestHierCollectives(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	kinds := []algo.Kind{algo.AllReduce, algo.ReduceScatter, algo.Reduce, algo.AllGather, algo.Broadcast}
	for _, b := range beds {
		t.Run(b.name, func(t *testing.T) {
			w := newWorldOn(t, b.hosts, 8*4096, 2, 60*time.Second, nil)
			n := len(b.hosts)
			for _, kind := range kinds {
				for i, c := range []collCase{{t: gccl.Int32, op: gccl.Sum}, {t: gccl.Float32, op: gccl.Max}, {t: gccl.BFloat16, op: gccl.NumBuiltinOps}, {t: gccl.Float64, op: gccl.Avg}, {t: gccl.Uint8, op: gccl.Min}} {
					if !kind.Reduces() && i > 1 {
						continue
					}
					for _, count := range []int{0, 1, 7, 1000} {
						for _, inPlace := range []bool{false, true} {
							c.kind, c.count, c.inPlace, c.root = kind, count, inPlace, (count+i)%n
							runColl(t, w, c, rng)
						}
					}
				}
			}
			big := newWorldOn(t, b.hosts, 8*64<<10, 2, 120*time.Second, nil)
			for _, kind := range kinds {
				runColl(t, big, collCase{kind: kind, t: gccl.Float32, op: gccl.Sum, count: 1000003, root: n - 1}, rng)
				runColl(t, big, collCase{kind: kind, t: gccl.Int32, op: gccl.Sum, count: 1000003, root: 1, inPlace: true}, rng)
			}
		})
	}
}

// TestHierSendRecv: point-to-point patterns on every bed (all to all with
// several pieces per pair, then a ring shift), and a graph captured with
// an all-reduce and a ring shift, replayed with new inputs.
func TestHierSendRecv(t *testing.T) {
	for i, b := range beds {
		t.Run(b.name, func(t *testing.T) {
			w := newWorldOn(t, b.hosts, 8*4096, 2, 60*time.Second, nil)
			runSendRecv(t, w, rand.New(rand.NewPCG(15, uint64(i))))
			runGraphReplay(t, newWorldOn(t, b.hosts, 8*4096, 2, 60*time.Second, nil))
		})
	}
}

// TestHierPairs: a launch in which one rank meets several new peers of
// both kinds in an order its peers do not share (rank r sends to r+1,
// r+2, r+3 and receives from them in reverse) connects without a cycle
// of waits, and every byte arrives.
func TestHierPairs(t *testing.T) {
	hosts := []int{0, 0, 0, 1, 1}
	w := newWorldOn(t, hosts, 8*4096, 1, 30*time.Second, nil)
	n := w.n
	rng := rand.New(rand.NewPCG(17, 18))
	ops := make([][]engine.Op, n)
	want := map[[2]int][]byte{}
	recvAt := map[[2]int]uintptr{}
	for r := range n {
		for d := 1; d <= 3; d++ {
			to := (r + d) % n
			b := make([]byte, 1000*(r+1)+d)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			want[[2]int{r, to}] = b
			ops[r] = append(ops[r], engine.Op{Kind: algo.P2PSend, Send: w.buf(t, r, b), Count: len(b), Type: gccl.Uint8, Peer: to, Stream: w.streams[r]})
		}
		for d := 3; d >= 1; d-- {
			from := (r - d + n) % n
			size := 1000*(from+1) + d
			p := w.buf(t, r, bytes.Repeat([]byte{0xA5}, size))
			recvAt[[2]int{from, r}] = p
			ops[r] = append(ops[r], engine.Op{Kind: algo.P2PRecv, Recv: p, Count: size, Type: gccl.Uint8, Peer: from, Stream: w.streams[r]})
		}
	}
	w.launch(t, ops)
	for k, b := range want {
		require.Equal(t, b, w.out(t, k[1], recvAt[k], len(b)), fmt.Sprintf("%d to %d", k[0], k[1]))
	}
	checkKinds(t, w, hosts, false)
}
