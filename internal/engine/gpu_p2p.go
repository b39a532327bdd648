package engine

import (
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/kernels"
)

// p2pPiece is one Send or Recv of a launch: where its bytes are and how many.
type p2pPiece struct {
	ptr   uintptr
	bytes int
}

// p2p enqueues a launch's sends and receives. Pairs of ranks meet in the
// rounds of a round-robin tournament (every rank has at most one partner per
// round, so the pairwise kernels can never wait in a cycle). In a round the
// partners stage what they send each other in their bulk areas, one
// gccl_p2p_copy kernel on each side pulls the partner's bytes, and the
// received bytes are copied out to the receive buffers in issue order.
// Both sides know the volume in both directions, so they agree on how many
// bulk-sized sub-rounds a pair needs.
func (g *gpuBackend) p2p(e *Engine, ops []Op, s cuda.Stream) error {
	if len(ops) == 0 {
		return nil
	}
	n, me := e.nranks, e.rank
	sends, recvs := make([][]p2pPiece, n), make([][]p2pPiece, n)
	for i := range ops {
		o := &ops[i]
		b := o.Count * o.Type.Size()
		if b == 0 {
			continue
		}
		if o.Kind == Send {
			sends[o.Peer] = append(sends[o.Peer], p2pPiece{o.Send, b})
		} else {
			recvs[o.Peer] = append(recvs[o.Peer], p2pPiece{o.Recv, b})
		}
	}
	if err := g.selfCopy(sends[me], recvs[me], s); err != nil {
		return err
	}
	for round := range tournamentRounds(n) {
		peer := partner(me, round, n)
		if peer < 0 || (len(sends[peer]) == 0 && len(recvs[peer]) == 0) {
			continue
		}
		if err := g.exchangeWith(e, peer, sends[peer], recvs[peer], s); err != nil {
			return err
		}
	}
	return nil
}

// tournamentRounds is the number of rounds of the circle method for n ranks.
func tournamentRounds(n int) int {
	if n%2 == 1 {
		n++
	}
	return n - 1
}

// partner is rank r's partner in round k of n ranks' round-robin tournament
// (circle method), or -1 when r sits the round out.
func partner(r, k, n int) int {
	m := n
	if m%2 == 1 {
		m++ // a dummy rank m-1
	}
	var p int
	switch {
	case r == m-1:
		p = k
	case r == k:
		p = m - 1
	default:
		p = ((2*k-r)%(m-1) + (m - 1)) % (m - 1)
	}
	if p >= n {
		return -1
	}
	return p
}

// selfCopy moves a rank's sends to itself into its receives from itself.
func (g *gpuBackend) selfCopy(sends, recvs []p2pPiece, s cuda.Stream) error {
	return walkPieces(recvs, sends, 1<<62, func(dst, src uintptr, n int) error { return g.copyAsync(dst, src, n, s) })
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

// flatten views pieces as one byte stream window [off, off+k), expressed
// as pieces.
func window(ps []p2pPiece, off, k int) []p2pPiece {
	var out []p2pPiece
	for _, p := range ps {
		if k == 0 {
			break
		}
		if off >= p.bytes {
			off -= p.bytes
			continue
		}
		take := min(p.bytes-off, k)
		out = append(out, p2pPiece{p.ptr + uintptr(off), take})
		off, k = 0, k-take
	}
	return out
}

func total(ps []p2pPiece) int {
	t := 0
	for _, p := range ps {
		t += p.bytes
	}
	return t
}

// exchangeWith moves sends to and receives from peer through the bulk
// areas: the first half holds what a rank sends, the second what it pulled.
func (g *gpuBackend) exchangeWith(e *Engine, peer int, sends, recvs []p2pPiece, s cuda.Stream) error {
	const half = gpuBulkBytes / 2
	me := e.rank
	out, in := total(sends), total(recvs)
	for off := 0; off < max(out, in) || off == 0; off += half {
		ko, ki := max(0, min(half, out-off)), max(0, min(half, in-off))
		stage := []p2pPiece{{g.bulk(me), ko}}
		if err := walkPieces(stage, window(sends, off, ko), half, func(d, src uintptr, n int) error { return g.copyAsync(d, src, n, s) }); err != nil {
			return err
		}
		c := g.comm(e.nranks, g.bulk, gpuBulkBytes)
		c.In[peer] = g.bulk(peer)
		c.Out[me] = g.bulk(me) + half
		c.Root = int32(peer)
		recv := int32(0)
		if ki > 0 {
			recv = 1
		}
		err := g.launch(kernels.P2PCopy, gpuP2PChannels, s, &c, func(a *cuda.Args) { a.U64(uint64(ki)).I32(recv) })
		if err != nil {
			return err
		}
		got := []p2pPiece{{g.bulk(me) + half, ki}}
		if err := walkPieces(window(recvs, off, ki), got, half, func(d, src uintptr, n int) error { return g.copyAsync(d, src, n, s) }); err != nil {
			return err
		}
		if max(out, in) == 0 {
			break
		}
	}
	return nil
}
