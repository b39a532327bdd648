package gpu

import (
	"bytes"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestP2PDescLayout: the Go constants match kernels/p2p.cu, and the
// Comm and the descriptor fit the 4 KiB of kernel parameters.
func TestP2PDescLayout(t *testing.T) {
	src, err := os.ReadFile("../../../kernels/p2p.cu")
	require.NoError(t, err)
	m := regexp.MustCompile(`#define GCCL_P2P_MAX_PIECES (\d+)`).FindSubmatch(src)
	require.NotNil(t, m)
	assert.Equal(t, strconv.Itoa(p2pMaxPieces), string(m[1]))
	assert.Contains(t, string(src), "#define GCCL_P2P_MAX_PAIRS (GCCL_MAX_RANKS - 1)")
	assert.Contains(t, string(src), "gccl_p2p(const gcclComm c, const gcclP2PDesc d)")
	assert.Equal(t, 3368, p2pDescBytes)
	assert.LessOrEqual(t, kernels.DevCommBytes+p2pDescBytes, 4096)
	for n := 2; n <= kernels.MaxRanks; n++ {
		q := p2pPiecesPerPair(n)
		assert.LessOrEqual(t, 2*(n-1)*q, p2pMaxPieces, "n=%d", n)
		assert.Positive(t, q)
		// A rank talking to every peer with the most channels stays in the grid.
		set := gpuplan.DefaultSettings()
		maxCh := set.P2PChannels(n, 1<<30, topo.LinkNVLink)
		assert.LessOrEqual(t, (n-1)*maxCh, kernels.MaxChannels, "n=%d", n)
		// Every channel's halves hold at least 4 KiB with the smallest bulk
		// area, 16 KiB with the default one.
		g := &Backend{set: set}
		g.set.BulkBytes = gpuplan.BulkMin
		assert.GreaterOrEqual(t, g.p2pRegionBytes(n)/maxCh/2, 4<<10, "n=%d", n)
		g.set.BulkBytes = gpuplan.BulkBytes
		assert.GreaterOrEqual(t, g.p2pRegionBytes(n)/maxCh/2, 16<<10, "n=%d", n)
	}
}

// TestWalkPieces pairs random piece lists as byte streams and checks every
// byte lands where a flat copy would put it, with no run crossing limit.
func TestWalkPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		total := 1 + rng.IntN(300)
		split := func(base uintptr) []p2pPiece {
			var ps []p2pPiece
			for off := 0; off < total; {
				k := min(total-off, 1+rng.IntN(60))
				ps = append(ps, p2pPiece{base + uintptr(off), k})
				off += k
			}
			return ps
		}
		src, dst := split(1000), split(100000)
		limit := 1 + rng.IntN(80)
		seen := make([]bool, total)
		pos := 0
		err := walkPieces(dst, src, limit, func(d, s uintptr, k int) error {
			require.Equal(t, int(s-1000), int(d-100000), "trial %d", trial)
			require.Equal(t, pos, int(s-1000))
			require.LessOrEqual(t, pos%limit+k, limit, "run crosses the limit")
			for i := range k {
				seen[pos+i] = true
			}
			pos += k
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, total, pos)
		assert.NotContains(t, seen, false)
	}
}

// p2pMsg is one matched Send/Recv of a random group.
type p2pMsg struct {
	src, dst   int
	data       []byte
	typ        gccl.DataType
	send, recv uintptr // the buffers' data
	recvBuf    uintptr // the receive allocation (guards around the data)
}

const p2pGuard = 16

// p2pWorld is launchWorld with the gccl_p2p emulation on every fake GPU;
// launches counts each rank's kernel launches.
func p2pWorld(t *testing.T, n int) ([]*launchRank, []*atomic.Int64) {
	rs := launchWorld(t, n, false)
	counts := make([]*atomic.Int64, n)
	for r, x := range rs {
		counts[r] = new(atomic.Int64)
		registerP2PKernel(x.g.drv.(*cudafake.Fake), counts[r])
	}
	crossMap(t, rs)
	return rs, counts
}

// crossMap maps every peer's communication buffer into each rank's fake
// GPU through the fake's IPC. (The fakes share one process and one address
// layout, so the mapping launchWorld makes gives a rank its own buffer at
// every peer's address.)
func crossMap(t *testing.T, rs []*launchRank) {
	gs := make([]*Backend, len(rs))
	for r, x := range rs {
		gs[r] = x.g
	}
	crossMapBackends(t, gs)
}

// crossMapBackends is crossMap for the backends of one communicator.
func crossMapBackends(t *testing.T, gs []*Backend) {
	handles := make([]cuda.IpcMemHandle, len(gs))
	for p, g := range gs {
		var err error
		handles[p], err = g.drv.IpcGetMemHandle(g.buf)
		require.NoError(t, err)
	}
	for r, g := range gs {
		for p := range gs {
			if p == r {
				continue
			}
			va, err := g.drv.IpcOpenMemHandle(handles[p], cuda.IpcLazyEnablePeerAccess)
			require.NoError(t, err)
			g.peers.Ptrs[p] = va
			g.base.Flags[p] = g.flags(p)
			t.Cleanup(func() { assert.NoError(t, g.drv.IpcCloseMemHandle(va)) })
		}
	}
}

// randomP2PGroup makes the messages of one group: for every ordered pair
// of ranks (self included) a few messages of random sizes (zero, tiny,
// unaligned, across segments); with many, one pair gets more pieces than
// one kernel carries.
func randomP2PGroup(t *testing.T, rng *rand.Rand, rs []*launchRank, many bool) []*p2pMsg {
	n := len(rs)
	var msgs []*p2pMsg
	bigSrc, bigDst := rng.IntN(n), rng.IntN(n)
	for src := range n {
		for dst := range n {
			k := rng.IntN(4)
			if many && src == bigSrc && dst == bigDst {
				k = p2pPiecesPerPair(n) + 1 + rng.IntN(20)
			}
			for range k {
				msgs = append(msgs, newP2PMsg(t, rng, rs, src, dst, k > 3))
			}
		}
	}
	return msgs
}

func newP2PMsg(t *testing.T, rng *rand.Rand, rs []*launchRank, src, dst int, small bool) *p2pMsg {
	size := 0
	switch c := rng.IntN(5); {
	case c == 0:
	case c == 1 || small:
		size = 1 + rng.IntN(100)
	case c == 2:
		size = 1 + rng.IntN(20000)
	default:
		size = 20000 + rng.IntN(150000)
	}
	m := &p2pMsg{src: src, dst: dst, data: make([]byte, size), typ: gccl.Uint8}
	for i := range m.data {
		m.data[i] = byte(rng.Uint32())
	}
	if size%4 == 0 && rng.IntN(2) == 0 {
		m.typ = gccl.Int32
	}
	if size == 0 {
		return m
	}
	sb, err := rs[src].d.Alloc(size + 16)
	require.NoError(t, err)
	m.send = sb + uintptr(rng.IntN(2)*rng.IntN(16))
	require.NoError(t, rs[src].d.CopyIn(m.send, m.data))
	m.recvBuf, err = rs[dst].d.Alloc(size + 2*p2pGuard)
	require.NoError(t, err)
	m.recv = m.recvBuf + uintptr(p2pGuard-rng.IntN(2)*rng.IntN(16))
	require.NoError(t, rs[dst].d.CopyIn(m.recvBuf, bytes.Repeat([]byte{0xA5}, size+2*p2pGuard)))
	t.Cleanup(func() { _ = rs[src].d.Free(sb); _ = rs[dst].d.Free(m.recvBuf) })
	return m
}

// p2pOps are rank r's ops of msgs: its sends to each peer and receives
// from each peer in message order, the lanes interleaved at random.
func p2pOps(rng *rand.Rand, msgs []*p2pMsg, r int, s gccl.Stream) []engine.Op {
	type lane struct{ peer, kind int }
	lanes := map[lane][]engine.Op{}
	var keys []lane
	for _, m := range msgs {
		count := len(m.data) / m.typ.Size()
		var k lane
		var o engine.Op
		switch {
		case m.src == r:
			k, o = lane{m.dst, 0}, engine.Op{Kind: algo.P2PSend, Send: m.send, Count: count, Type: m.typ, Peer: m.dst, Stream: s}
		case m.dst == r:
			k, o = lane{m.src, 1}, engine.Op{Kind: algo.P2PRecv, Recv: m.recv, Count: count, Type: m.typ, Peer: m.src, Stream: s}
		default:
			continue
		}
		if m.src == r && m.dst == r { // a send to self is also a receive from self
			if _, ok := lanes[lane{r, 1}]; !ok {
				keys = append(keys, lane{r, 1})
			}
			lanes[lane{r, 1}] = append(lanes[lane{r, 1}], engine.Op{Kind: algo.P2PRecv, Recv: m.recv, Count: count, Type: m.typ, Peer: r, Stream: s})
		}
		if _, ok := lanes[k]; !ok {
			keys = append(keys, k)
		}
		lanes[k] = append(lanes[k], o)
	}
	var ops []engine.Op
	for len(keys) > 0 {
		i := rng.IntN(len(keys))
		ops = append(ops, lanes[keys[i]][0])
		if lanes[keys[i]] = lanes[keys[i]][1:]; len(lanes[keys[i]]) == 0 {
			keys = append(keys[:i], keys[i+1:]...)
		}
	}
	return ops
}

// checkP2P checks every received byte and the guards around it, and that
// no kernel reported a failure.
func checkP2P(t *testing.T, rs []*launchRank, msgs []*p2pMsg) {
	for r, x := range rs {
		require.NoError(t, x.d.Synchronize(x.s), "rank %d", r)
		require.NoError(t, x.e.AsyncError(), "rank %d", r)
		assert.Equal(t, uint32(kernels.StatusOK), x.g.ctl.Load(), "rank %d", r)
	}
	for i, m := range msgs {
		if len(m.data) == 0 {
			continue
		}
		x := rs[m.dst]
		all := make([]byte, len(m.data)+2*p2pGuard)
		require.NoError(t, x.d.CopyOut(all, m.recvBuf))
		at := int(m.recv - m.recvBuf)
		require.Equal(t, m.data, all[at:at+len(m.data)], "message %d: %d→%d, %d bytes", i, m.src, m.dst, len(m.data))
		assert.Equal(t, bytes.Repeat([]byte{0xA5}, at), all[:at], "message %d: guard before", i)
		assert.Equal(t, bytes.Repeat([]byte{0xA5}, len(all)-at-len(m.data)), all[at+len(m.data):], "message %d: guard after", i)
	}
}

// TestGPUP2P runs random groups of sends and receives among 2-4 ranks
// through the GPU backend and the gccl_p2p emulation: several pieces per
// peer, zero-byte ones, sends to self, sizes across many segments (a small
// region) and across the real region, more pieces than one kernel carries.
// Every byte is checked, and a group without too many pieces is one kernel.
func TestGPUP2P(t *testing.T) {
	for n := 2; n <= 4; n++ {
		rs, counts := p2pWorld(t, n)
		rng := rand.New(rand.NewPCG(uint64(n), 99))
		for round := range 6 {
			region := int64(4096 + 16*rng.IntN(4096))
			if round == 5 {
				region = 0 // the real one
			}
			for _, x := range rs {
				x.g.testRegion = int(region)
			}
			many := round == 2
			msgs := randomP2PGroup(t, rng, rs, many)
			before := make([]int64, n)
			for r, x := range rs {
				before[r] = counts[r].Load()
				require.NoError(t, x.e.Launch(p2pOps(rng, msgs, r, x.s)), "n=%d round %d rank %d", n, round, r)
			}
			checkP2P(t, rs, msgs)
			for r := range rs {
				peers := map[int]bool{}
				for _, m := range msgs {
					if len(m.data) > 0 && m.src != m.dst && (m.src == r || m.dst == r) {
						peers[m.src+m.dst-r] = true
					}
				}
				got := counts[r].Load() - before[r]
				switch {
				case len(peers) == 0:
					assert.Zero(t, got, "n=%d round %d rank %d", n, round, r)
				case !many:
					assert.Equal(t, int64(1), got, "n=%d round %d rank %d: kernels per group", n, round, r)
				}
			}
		}
	}
}

// TestP2PChannelsAgree: both ranks of a pair get the same channel count
// from the values they both know, whatever else each talks to.
func TestP2PChannelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		n := 2 + rng.IntN(kernels.MaxRanks-1)
		a, b := rng.IntN(n), rng.IntN(n)
		if a == b {
			continue
		}
		ab, ba := rng.IntN(1<<26), rng.IntN(1<<26)
		sends, recvs := make([][]p2pPiece, n), make([][]p2pPiece, n)
		sends[b], recvs[b] = []p2pPiece{{1, ab}}, []p2pPiece{{2, ba}}
		other := (b + 1) % n
		if other != a && other != b {
			sends[other] = []p2pPiece{{3, rng.IntN(1 << 26)}}
		}
		links := []topo.LinkKind{topo.LinkNVLink, topo.LinkPCIe, topo.LinkUnknown}[rng.IntN(3)]
		la, lb := make([]topo.LinkKind, n), make([]topo.LinkKind, n)
		la[b], lb[a] = links, links // as peerLinks gives them
		pa := p2pPairs(n, a, sends, recvs, 0, 8, gpuplan.DefaultSettings(), la)
		sendsB, recvsB := make([][]p2pPiece, n), make([][]p2pPiece, n)
		sendsB[a], recvsB[a] = []p2pPiece{{4, ba}}, []p2pPiece{{5, ab}}
		pb := p2pPairs(n, b, sendsB, recvsB, 0, 8, gpuplan.DefaultSettings(), lb)
		require.Len(t, pb, 1)
		for _, p := range pa {
			if p.peer == b {
				assert.Equal(t, pb[0].nch, p.nch)
			}
		}
	}
}

// TestAsyncErrorReadsKernelStatus: a kernel that gave up (here: its status
// word set as the device code sets it) leaves its stream done and its
// outputs unwritten, so AsyncError must report it without a further launch.
func TestAsyncErrorReadsKernelStatus(t *testing.T) {
	rs, _ := p2pWorld(t, 2)
	for r, x := range rs {
		require.NoError(t, x.e.AsyncError(), "rank %d", r)
	}
	atomic.StoreUint32(rs[1].g.ctl.StatusWord(), kernels.StatusTimeout)
	require.ErrorIs(t, rs[1].e.AsyncError(), gccl.ErrTimeout)
	require.NoError(t, rs[0].e.AsyncError())
}
