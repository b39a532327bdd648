package algo

import "math/bits"

// node is one rank's place in a tree: its parent (-1 at the root) and its
// children, in the order their contributions are reduced.
type node struct {
	parent   int
	children []int
}

// chainTree is the pipeline chain root → root+1 → … → root-1 seen from rank.
func chainTree(n, root, rank int) node {
	pos := (rank - root + n) % n
	nd := node{parent: -1}
	if pos > 0 {
		nd.parent = (rank - 1 + n) % n
	}
	if pos < n-1 {
		nd.children = []int{(rank + 1) % n}
	}
	return nd
}

// heapTree is the binary tree over positions rooted at root: position p has
// children 2p+1 and 2p+2, and position p is rank (root+p) mod n.
func heapTree(n, root, rank int) node {
	pos := (rank - root + n) % n
	toRank := func(p int) int { return (root + p) % n }
	nd := node{parent: -1}
	if pos > 0 {
		nd.parent = toRank((pos - 1) / 2)
	}
	for _, c := range []int{2*pos + 1, 2*pos + 2} {
		if c < n {
			nd.children = append(nd.children, toRank(c))
		}
	}
	return nd
}

// btree is a binary tree over ranks 0..n-1 in which the leaves are exactly
// the odd ranks: rank 0 is the root with one child, the largest power of two
// below n; a rank r > 0 whose lowest set bit is b has children r-b/2 and
// r+b/2 (or r+b/4, r+b/8, … while that is out of range), and its parent is r
// with bit b cleared and bit 2b set, or just cleared when that is out of
// range. Mirroring the ranks (even n) or shifting them by one (odd n) turns
// leaves into inner nodes, which gives the second tree of the double tree.
func btree(n, r int) node {
	nd := node{parent: -1}
	if r == 0 {
		if n > 1 {
			nd.children = []int{1 << (bits.Len(uint(n-1)) - 1)}
		}
		return nd
	}
	b := r & -r
	nd.parent = (r ^ b) | b<<1
	if nd.parent >= n {
		nd.parent = r ^ b
	}
	if b > 1 {
		nd.children = append(nd.children, r-b/2)
		for lb := b / 2; lb > 0; lb /= 2 {
			if r+lb < n {
				nd.children = append(nd.children, r+lb)
				break
			}
		}
	}
	return nd
}

// doubleTree returns rank's node in tree t (0 or 1) of the double binary tree.
func doubleTree(n, t, rank int) node {
	if t == 0 {
		return btree(n, rank)
	}
	var to, from func(int) int
	if n%2 == 0 {
		to = func(r int) int { return n - 1 - r }
		from = to
	} else {
		to = func(r int) int { return (r + n - 1) % n }
		from = func(v int) int { return (v + 1) % n }
	}
	v := btree(n, to(rank))
	nd := node{parent: -1}
	if v.parent >= 0 {
		nd.parent = from(v.parent)
	}
	for _, c := range v.children {
		nd.children = append(nd.children, from(c))
	}
	return nd
}

// tree emits the tree schedules: the double binary tree for AllReduce and a
// binary tree from the root for Broadcast and Reduce.
func (b *builder) tree() {
	n, es := b.p.NRanks, b.p.ElemSize
	if b.p.Kind != AllReduce {
		b.treeRooted(heapTree(n, b.p.Root, b.p.Rank))
		return
	}
	if n == 1 {
		b.copyLocal(ref(SendBuf, 0), ref(RecvBuf, 0), b.p.Count*es)
		return
	}
	halves := Split(b.p.Count, 2, alignElems(es))
	m := NumPieces(halves[0].Len, es, b.p.ChunkBytes)
	var pieces [2][]Span
	var nodes [2]node
	for t := range 2 {
		pieces[t] = Split(halves[t].Len, m, alignElems(es))
		nodes[t] = doubleTree(n, t, b.p.Rank)
	}
	at := func(t, k int) (int, int) { return (halves[t].Off + pieces[t][k].Off) * es, pieces[t][k].Len * es }
	for k := range m {
		for t := range 2 {
			off, ln := at(t, k)
			b.up(nodes[t], ref(SendBuf, off), ref(RecvBuf, off), ln)
		}
	}
	for k := range m {
		for t := range 2 {
			off, ln := at(t, k)
			b.down(nodes[t], ref(RecvBuf, off), ref(RecvBuf, off), ln)
		}
	}
}

// up emits the reduction of one piece towards the tree's root: in is the
// rank's contribution, acc where its subtree's partial result is kept.
func (b *builder) up(nd node, in, acc Ref, n int) {
	if len(nd.children) == 0 {
		if nd.parent >= 0 {
			b.emit(Step{Op: Send, To: nd.parent, Src: in, Len: n})
		} else {
			b.copyLocal(in, acc, n)
		}
		return
	}
	src := in
	for i, c := range nd.children {
		op := RecvReduce
		if i == len(nd.children)-1 && nd.parent >= 0 {
			op = RecvReduceSend
		}
		b.emit(Step{Op: op, From: c, To: nd.parent, Src: src, Dst: acc, Len: n})
		src = acc
	}
}

// down emits the broadcast of one piece from the tree's root: the root sends
// from src, every other rank receives into dst and forwards from there.
func (b *builder) down(nd node, src, dst Ref, n int) {
	from := src
	rest := nd.children
	if nd.parent >= 0 {
		if len(rest) == 0 {
			b.emit(Step{Op: Recv, From: nd.parent, Dst: dst, Len: n})
			return
		}
		b.emit(Step{Op: RecvCopySend, From: nd.parent, To: rest[0], Dst: dst, Len: n})
		from, rest = dst, rest[1:]
	}
	for _, c := range rest {
		b.emit(Step{Op: Send, To: c, Src: from, Len: n})
	}
}

// treeRooted emits Broadcast or Reduce over a rooted tree, piece by piece.
func (b *builder) treeRooted(nd node) {
	es, cnt := b.p.ElemSize, b.p.Count
	pieces := b.pieces(cnt)
	isRoot := nd.parent < 0
	if b.p.Kind == Broadcast {
		for _, s := range pieces {
			off, ln := s.Off*es, s.Len*es
			if isRoot {
				b.copyLocal(ref(SendBuf, off), ref(RecvBuf, off), ln)
			}
			b.down(nd, ref(SendBuf, off), ref(RecvBuf, off), ln)
		}
		return
	}
	maxPiece := pieces[0].Len * es
	slots := min(len(pieces), 2)
	if !isRoot && len(nd.children) > 0 {
		b.useScratch(slots * maxPiece)
	}
	for k, s := range pieces {
		off, ln := s.Off*es, s.Len*es
		acc := ref(RecvBuf, off)
		if !isRoot {
			acc = ref(ScratchBuf, (k%slots)*maxPiece)
		}
		b.up(nd, ref(SendBuf, off), acc, ln)
	}
}
