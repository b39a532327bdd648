package gpu

import (
	"encoding/binary"

	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/devcopy"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/topo"
)

// p2pPiece is one Send or Recv of a launch: where its bytes are and how many.
type p2pPiece struct {
	ptr   uintptr
	bytes int
}

// p2pPair is one peer of a kernels.P2P launch: the pieces sent to it and
// received from it (each an issue-ordered byte stream) and the pair's
// channel count, which the peer computes the same.
type p2pPair struct {
	peer, nch  int
	send, recv []p2pPiece
}

// The descriptor of kernels.P2P, struct gcclP2PDesc of kernels/p2p.cu,
// passed by value after the Comm:
//
//	int32 npairs; int32 reserved; uint64 regionBytes;
//	pairs[p2pMaxPairs] of 40 bytes: uint64 sendBytes, recvBytes;
//	    int32 peer, nch, send, nsend, recv, nrecv (piece indexes, counts);
//	pieces[p2pMaxPieces] of 16 bytes: uint64 ptr, bytes.
const (
	p2pMaxPairs  = kernels.MaxRanks - 1 // GCCL_P2P_MAX_PAIRS
	p2pMaxPieces = 192                  // GCCL_P2P_MAX_PIECES
	p2pPairBytes = 40                   // sizeof(gcclP2PPair)
	p2pPiecesAt  = 16 + p2pMaxPairs*p2pPairBytes
	p2pDescBytes = p2pPiecesAt + p2pMaxPieces*16 // sizeof(gcclP2PDesc)
	p2pDescAlign = 8
)

// sendRecv enqueues a launch's sends and receives: sends to self are copied by
// the copy engine, everything else moves in one kernels.P2P launch in
// which every peer's pair of byte streams has its own channels (blocks),
// so all peers progress at once and pairs cannot wait on each other.
//
// A launch whose pieces do not fit the descriptor is split into several
// kernels the peers agree on: kernel k carries pieces [k*q, (k+1)*q) of
// every pair and direction (q = p2pPiecesPerPair(n)). A Send matches the
// peer's Recv of the same size, so both ranks of a pair put the same bytes
// in each kernel.
func (g *Backend) sendRecv(ops []engine.Op, s cuda.Stream) error {
	if len(ops) == 0 {
		return nil
	}
	n, me := g.nranks, g.rank
	sends, recvs := make([][]p2pPiece, n), make([][]p2pPiece, n)
	for i := range ops {
		o := &ops[i]
		b := o.Count * o.Type.Size()
		if b == 0 {
			continue
		}
		if o.Kind == algo.P2PSend {
			sends[o.Peer] = append(sends[o.Peer], p2pPiece{o.Send, b})
		} else {
			recvs[o.Peer] = append(recvs[o.Peer], p2pPiece{o.Recv, b})
		}
	}
	if err := g.selfCopy(sends[me], recvs[me], s); err != nil {
		return err
	}
	q := p2pPiecesPerPair(n)
	for k := 0; ; k++ {
		pairs := p2pPairs(n, me, sends, recvs, k*q, q, g.set, g.peerLink)
		if len(pairs) == 0 {
			return nil
		}
		if err := g.p2pLaunch(n, pairs, s); err != nil {
			return err
		}
	}
}

// p2pPiecesPerPair is how many pieces of each pair and direction one
// kernel carries, so that the pieces of n-1 peers always fit.
func p2pPiecesPerPair(n int) int {
	return max(1, p2pMaxPieces/(2*max(1, n-1)))
}

// p2pPairs are the pairs of one kernel: for every peer but me, its pieces
// [lo, lo+q) of each direction; peers with none are left out. A pair's
// channel count is set.P2PChannels of its larger direction over its link
// (links[peer]; nil or short: unknown), which both ranks of the pair
// compute alike.
func p2pPairs(n, me int, sends, recvs [][]p2pPiece, lo, q int, set gpuplan.Settings, links []topo.LinkKind) []p2pPair {
	var pairs []p2pPair
	for peer := range n {
		if peer == me {
			continue
		}
		sw, rw := p2pSub(sends[peer], lo, q), p2pSub(recvs[peer], lo, q)
		if len(sw) == 0 && len(rw) == 0 {
			continue
		}
		link := topo.LinkUnknown
		if peer < len(links) {
			link = links[peer]
		}
		pairs = append(pairs, p2pPair{peer: peer, nch: set.P2PChannels(n, max(total(sw), total(rw)), link), send: sw, recv: rw})
	}
	return pairs
}

// p2pSub is ps[lo:lo+q], clipped to ps.
func p2pSub(ps []p2pPiece, lo, q int) []p2pPiece {
	return ps[min(lo, len(ps)):min(lo+q, len(ps))]
}

// p2pRegionBytes is the part of each rank's bulk area that carries what it
// sends to one peer (every peer has its own, by rank): set.P2PRegionBytes,
// or testRegion.
func (g *Backend) p2pRegionBytes(n int) int {
	if g.testRegion > 0 {
		return g.testRegion
	}
	return g.set.P2PRegionBytes(n)
}

// p2pLaunch launches kernels.P2P for pairs, one block per channel.
func (g *Backend) p2pLaunch(n int, pairs []p2pPair, s cuda.Stream) error {
	grid := 0
	for _, p := range pairs {
		grid += p.nch
	}
	c := g.comm(n, g.bulk, g.set.BulkBytes)
	region := g.p2pRegionBytes(n)
	return g.launch(kernels.P2P, grid, s, &c, func(a *cuda.Args) {
		putP2PDesc(a.Slot(p2pDescBytes, p2pDescAlign), pairs, region)
	})
}

// putP2PDesc writes the descriptor of pairs into b (zeroed, p2pDescBytes).
func putP2PDesc(b []byte, pairs []p2pPair, region int) {
	le := binary.LittleEndian
	le.PutUint32(b, uint32(len(pairs)))
	le.PutUint64(b[8:], uint64(region))
	idx := 0
	put := func(ps []p2pPiece) {
		for _, p := range ps {
			at := b[p2pPiecesAt+16*idx:]
			le.PutUint64(at, uint64(p.ptr))
			le.PutUint64(at[8:], uint64(p.bytes))
			idx++
		}
	}
	for j, p := range pairs {
		at := b[16+j*p2pPairBytes:]
		le.PutUint64(at, uint64(total(p.send)))
		le.PutUint64(at[8:], uint64(total(p.recv)))
		le.PutUint32(at[16:], uint32(p.peer))
		le.PutUint32(at[20:], uint32(p.nch))
		le.PutUint32(at[24:], uint32(idx))
		le.PutUint32(at[28:], uint32(len(p.send)))
		put(p.send)
		le.PutUint32(at[32:], uint32(idx))
		le.PutUint32(at[36:], uint32(len(p.recv)))
		put(p.recv)
	}
}

// selfCopy moves a rank's sends to itself into its receives from itself.
func (g *Backend) selfCopy(sends, recvs []p2pPiece, s cuda.Stream) error {
	if len(sends) > 0 {
		g.last.Store(pathCopy)
	}
	return walkPieces(recvs, sends, 1<<62, func(dst, src uintptr, n int) error { return devcopy.Async(g.drv, dst, src, n, s) })
}

// walkPieces pairs the bytes of src pieces with those of dst pieces in
// order, in runs that do not cross a piece boundary or a multiple of limit
// bytes, and calls copy for each run.
func walkPieces(dst, src []p2pPiece, limit int, copy func(dst, src uintptr, n int) error) error {
	var di, si, doff, soff, pos int
	for di < len(dst) && si < len(src) {
		k := min(dst[di].bytes-doff, src[si].bytes-soff, limit-pos%limit)
		if err := copy(dst[di].ptr+uintptr(doff), src[si].ptr+uintptr(soff), k); err != nil {
			return err
		}
		doff, soff, pos = doff+k, soff+k, pos+k
		if doff == dst[di].bytes {
			di, doff = di+1, 0
		}
		if soff == src[si].bytes {
			si, soff = si+1, 0
		}
	}
	return nil
}

func total(ps []p2pPiece) int {
	t := 0
	for _, p := range ps {
		t += p.bytes
	}
	return t
}
