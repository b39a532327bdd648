package algo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	for count := 0; count < 70; count++ {
		for parts := 1; parts < 9; parts++ {
			for _, align := range []int{1, 2, 4, 16} {
				spans := Split(count, parts, align)
				require.Len(t, spans, parts)
				off, lo, hi := 0, math.MaxInt, 0
				for i, s := range spans {
					require.Equal(t, off, s.Off, "count %d parts %d align %d span %d", count, parts, align, i)
					if s.Off+s.Len < count {
						require.Zero(t, (s.Off+s.Len)%align, "boundary not aligned")
					}
					off += s.Len
					if s.Len > 0 || off < count {
						lo, hi = min(lo, s.Len), max(hi, s.Len)
					}
				}
				require.Equal(t, count, off, "spans do not cover the count")
				if count >= parts*align {
					require.Less(t, hi-lo, 2*align, "count %d parts %d align %d: unbalanced", count, parts, align)
				}
			}
		}
	}
	assert.Nil(t, Split(5, 0, 1))
}

func TestNumPieces(t *testing.T) {
	assert.Equal(t, 1, NumPieces(0, 4, 16))
	assert.Equal(t, 1, NumPieces(4, 4, 16))
	assert.Equal(t, 2, NumPieces(5, 4, 16))
	assert.Equal(t, 1, NumPieces(1<<20, 4, 0))
}

// TestNumChannels: a channel per nranks × ChannelBytes of data, 1 to most,
// whatever the chunk.
func TestNumChannels(t *testing.T) {
	const kib = 1 << 10
	for _, c := range []struct{ bytes, nranks, most, want int }{
		{0, 2, 4, 1},
		{128*kib - 1, 2, 4, 1},       // below 64 KiB per rank
		{128 * kib, 2, 4, 1},         // one channel's worth
		{256 * kib, 2, 4, 2},         // two
		{1 << 20, 2, 4, 4},           // capped
		{64 << 20, 2, 1, 1},          // one channel allowed
		{1 << 20, 4, 16, 4},          // 256 KiB a rank: 4 channels
		{1 << 40, 1 << 10, 3, 3},     // large
		{3 * 64 * kib * 5, 5, 16, 3}, // exact multiples
		{3*64*kib*5 - 1, 5, 16, 2},   // just below
	} {
		assert.Equal(t, c.want, NumChannels(c.bytes, c.nranks, c.most), "%+v", c)
	}
}

// TestChannelPart: the parts cover the count in order, aligned.
func TestChannelPart(t *testing.T) {
	assert.Equal(t, Span{0, 37}, ChannelPart(37, 4, 0, 0))
	assert.Equal(t, Span{0, 37}, ChannelPart(37, 4, 1, 0))
	off := 0
	for c := range 3 {
		s := ChannelPart(37, 4, 3, c)
		assert.Equal(t, off, s.Off, "channel %d", c)
		assert.Zero(t, s.Off%4, "channel %d starts aligned", c)
		off += s.Len
	}
	assert.Equal(t, 37, off)
}

func TestBuildRejects(t *testing.T) {
	ok := Params{Kind: AllReduce, Algo: Ring, NRanks: 4, Rank: 1, Count: 10, ElemSize: 4}
	_, err := Build(ok)
	require.NoError(t, err)
	for name, mut := range map[string]func(*Params){
		"kind":     func(p *Params) { p.Kind = NumKinds },
		"auto":     func(p *Params) { p.Algo = Auto },
		"nranks":   func(p *Params) { p.NRanks = 0 },
		"rank":     func(p *Params) { p.Rank = 4 },
		"root":     func(p *Params) { p.Kind, p.Root = Broadcast, -1 },
		"count":    func(p *Params) { p.Count = -1 },
		"elem":     func(p *Params) { p.ElemSize = 0 },
		"overflow": func(p *Params) { p.Kind, p.Count = AllGather, math.MaxInt/2 },
		"chunk":    func(p *Params) { p.ChunkBytes = -1 },
		"channels": func(p *Params) { p.Channels = MaxChannels + 1 },
		"negch":    func(p *Params) { p.Channels = -1 },
		"channel":  func(p *Params) { p.Channels, p.Channel = 2, 2 },
		"channel0": func(p *Params) { p.Channel = 1 },
	} {
		p := ok
		mut(&p)
		_, err := Build(p)
		assert.Error(t, err, name)
	}
}

func TestDoubleTreeShape(t *testing.T) {
	for n := 1; n <= 64; n++ {
		inner := make([]int, n) // how many trees a rank is inner in
		for tr := range 2 {
			roots := 0
			for r := range n {
				nd := doubleTree(n, tr, r)
				require.LessOrEqual(t, len(nd.children), 2)
				if nd.parent < 0 {
					roots++
				} else {
					require.Contains(t, doubleTree(n, tr, nd.parent).children, r, "n %d tree %d: parent of %d disowns it", n, tr, r)
				}
				for _, c := range nd.children {
					require.Equal(t, r, doubleTree(n, tr, c).parent)
				}
				if len(nd.children) > 0 {
					inner[r]++
				}
			}
			require.Equal(t, 1, roots, "n %d tree %d", n, tr)
		}
		if n > 2 && n%2 == 0 {
			for r := range n {
				if r > 0 { // rank 0 is the first tree's root
					require.LessOrEqual(t, inner[r], 1, "n %d: rank %d is inner in both trees", n, r)
				}
			}
		}
	}
}

func TestParseAllowed(t *testing.T) {
	for in, want := range map[string]Allowed{
		"":             AllAlgorithms,
		"ring":         1 << Ring,
		"Ring,Tree":    1<<Ring | 1<<Tree,
		"^tree":        1<<Ring | 1<<Direct | 1<<ZeroCopy | 1<<Pipelined,
		"^zerocopy":    1<<Ring | 1<<Tree | 1<<Direct | 1<<Pipelined,
		"ZeroCopy":     1 << ZeroCopy,
		"DIRECT, nvls": 1 << Direct,
		"^ring,direct": 1<<Tree | 1<<ZeroCopy | 1<<Pipelined,
		"Pipelined":    1 << Pipelined,
		"collnet,ring": 1 << Ring,
	} {
		got, err := ParseAllowed(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"rung", "ring,,", "auto"} {
		_, err := ParseAllowed(bad)
		assert.Error(t, err, bad)
	}
}

func TestChoose(t *testing.T) {
	// Tiny all-reduces take the one-shot, big ones the ring, in between the tree can win at scale.
	assert.Equal(t, Direct, Choose(AllReduce, 8, 4, SHMLink, AllAlgorithms))
	assert.Equal(t, Ring, Choose(AllReduce, 256<<20, 4, SHMLink, AllAlgorithms))
	assert.Equal(t, Ring, Choose(AllGather, 256<<20, 8, SHMLink, AllAlgorithms))
	// The allow list is obeyed, and a list with nothing usable falls back to the ring.
	assert.Equal(t, Tree, Choose(AllReduce, 8, 4, SHMLink, 1<<Tree))
	assert.Equal(t, Ring, Choose(AllGather, 8, 4, SHMLink, 1<<Tree))
	// Costs grow with size for every algorithm.
	for _, k := range []Kind{AllReduce, Broadcast, Reduce, AllGather, ReduceScatter} {
		for _, a := range []Algorithm{Ring, Tree, Direct} {
			if Supports(k, a) {
				assert.Less(t, Cost(k, a, 1<<10, 8, NetLink), Cost(k, a, 1<<24, 8, NetLink), "%v %v", k, a)
			}
		}
	}
}

// FuzzBuild builds every rank's plan for random parameters, checks that the
// ranks' sends and receives pair up and stay inside the buffers, and runs
// small cases through the simulator.
func FuzzBuild(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint8(3), uint16(7), uint8(2), uint8(0), uint16(0), false)
	f.Add(uint8(4), uint8(3), uint8(16), uint16(1000), uint8(0), uint8(5), uint16(64), true)
	f.Fuzz(func(t *testing.T, kind, algo, n uint8, count uint16, esIdx, root uint8, chunk uint16, inPlace bool) {
		// The collectives only: Build plans no Send or Recv.
		c := simCase{kind: Kind(kind % uint8(P2PSend)), algo: Algorithm(1 + algo%3), n: 1 + int(n%16),
			count: int(count % 4096), es: []int{1, 2, 4, 8}[esIdx%4], chunk: int(chunk % 2048), inPlace: inPlace, seed: uint64(count)}
		c.root = int(root) % c.n
		plans := make([]*Plan, c.n)
		for r := range plans {
			p, err := Build(Params{Kind: c.kind, Algo: c.algo, NRanks: c.n, Rank: r, Root: c.root, Count: c.count, ElemSize: c.es, ChunkBytes: c.chunk})
			require.NoError(t, err)
			checkBounds(t, c, p)
			plans[r] = p
		}
		checkPairing(t, plans)
		if c.n*c.count <= 1<<14 {
			simulate(t, c)
		}
	})
}

func checkBounds(t *testing.T, c simCase, p *Plan) {
	sendSz, recvSz := c.sizes()
	limit := map[Buffer]int{SendBuf: sendSz, RecvBuf: recvSz, ScratchBuf: p.ScratchBytes}
	for _, s := range p.Steps {
		require.Positive(t, s.Len, "%v: empty step %v", c, s)
		if s.Op.Reads() {
			require.LessOrEqual(t, s.Src.Off+s.Len, limit[s.Src.Buf], "%v: %v reads past %v", c, s, s.Src.Buf)
		}
		if s.Op.Writes() {
			require.NotEqual(t, SendBuf, s.Dst.Buf, "%v: %v writes the send buffer", c, s)
			require.LessOrEqual(t, s.Dst.Off+s.Len, limit[s.Dst.Buf], "%v: %v writes past %v", c, s, s.Dst.Buf)
		}
		require.Zero(t, s.Len%c.es, "%v: %v splits an element", c, s)
	}
}

// checkPairing verifies that for every ordered pair of ranks the lengths
// sent match the lengths received, message by message.
func checkPairing(t *testing.T, plans []*Plan) {
	n := len(plans)
	sent := make([][][]int, n)
	for a, p := range plans {
		sent[a] = make([][]int, n)
		for _, s := range p.Steps {
			if s.Op.Sends() {
				sent[a][s.To] = append(sent[a][s.To], s.Len)
			}
		}
	}
	for b, p := range plans {
		got := make([][]int, n)
		for _, s := range p.Steps {
			if s.Op.Receives() {
				got[s.From] = append(got[s.From], s.Len)
			}
		}
		for a := range n {
			require.Equal(t, sent[a][b], got[a], "messages %d→%d", a, b)
		}
	}
}

// TestSlicesAndBlocksCover checks that slices and their blocks tile the
// buffer exactly, in order, with aligned interior boundaries.
func TestSlicesAndBlocksCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		n, es := 1+rng.IntN(16), []int{1, 2, 4, 8}[rng.IntN(4)]
		count := rng.IntN(200000)
		block := es * (1 + rng.IntN(5000))
		next := 0
		for r, s := range Slices(count, n, es) {
			require.Equal(t, next, s.Off, "slice %d of %d (count %d)", r, n, count)
			if s.Off+s.Len < count {
				require.Zero(t, (s.Off+s.Len)*es%AlignBytes, "slice %d end unaligned", r)
			}
			inner := s.Off
			for _, b := range Blocks(s, es, block) {
				require.Equal(t, inner, b.Off)
				require.Positive(t, b.Len)
				require.LessOrEqual(t, b.Len*es, max(block, es))
				inner += b.Len
			}
			require.Equal(t, s.Off+s.Len, inner)
			next += s.Len
		}
		require.Equal(t, count, next)
	}
}
