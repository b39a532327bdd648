package algo

// ringLayout maps block c, piece k of a ring pass to the rank's buffers.
type ringLayout struct {
	m    int                        // pieces per block
	span func(c, k int) Span        // piece k of block c, in elements within the block's own coordinates
	in   func(c int, s Span) Ref    // where this rank's contribution to block c lives
	mid  func(c, k int, s Span) Ref // where partial sums of block c are kept
	out  func(c int, s Span) Ref    // where the result of block c goes
}

func (b *builder) ring() {
	n, es := b.p.NRanks, b.p.ElemSize
	switch b.p.Kind {
	case AllReduce:
		blocks := Split(b.p.Count, n, alignElems(es))
		m := NumPieces(blocks[0].Len, es, b.p.ChunkBytes)
		at := func(buf Buffer) func(int, Span) Ref {
			return func(c int, s Span) Ref { return ref(buf, (blocks[c].Off+s.Off)*es) }
		}
		pieces := make([][]Span, n)
		for c := range pieces {
			pieces[c] = Split(blocks[c].Len, m, alignElems(es))
		}
		l := ringLayout{m: m, in: at(SendBuf), out: at(RecvBuf),
			span: func(c, k int) Span { return pieces[c][k] }}
		l.mid = func(c, _ int, s Span) Ref { return l.out(c, s) }
		if n == 1 {
			b.copyLocal(ref(SendBuf, 0), ref(RecvBuf, 0), b.p.Count*es)
			return
		}
		for k := range m {
			b.ringReduceScatter(l, k, true)
			b.ringAllGather(l, k)
		}
	case ReduceScatter:
		b.ringReduceScatterOnly()
	case AllGather:
		b.ringAllGatherOnly()
	case Broadcast, Reduce:
		b.treeRooted(chainTree(n, b.p.Root, b.p.Rank))
	}
}

func (b *builder) blockLayout() ringLayout {
	pieces := b.pieces(b.p.Count)
	return ringLayout{m: len(pieces), span: func(_, k int) Span { return pieces[k] }}
}

func (b *builder) ringReduceScatterOnly() {
	n, r, cnt, es := b.p.NRanks, b.p.Rank, b.p.Count, b.p.ElemSize
	l := b.blockLayout()
	maxPiece := l.span(0, 0).Len * es
	l.in = func(c int, s Span) Ref { return ref(SendBuf, (c*b.stride+s.Off)*es) }
	l.out = func(_ int, s Span) Ref { return ref(RecvBuf, s.Off*es) }
	slots := min(l.m, 2)
	l.mid = func(c, k int, _ Span) Ref {
		if c == r {
			return ref(RecvBuf, 0) // unused: the last step writes out
		}
		return ref(ScratchBuf, ((k%slots)*n+c)*maxPiece)
	}
	if n == 1 {
		b.copyLocal(ref(SendBuf, 0), ref(RecvBuf, 0), cnt*es)
		return
	}
	b.useScratch(slots * n * maxPiece)
	for k := range l.m {
		b.ringReduceScatter(l, k, false)
	}
}

func (b *builder) ringAllGatherOnly() {
	n, r, es := b.p.NRanks, b.p.Rank, b.p.ElemSize
	l := b.blockLayout()
	l.in = func(_ int, s Span) Ref { return ref(SendBuf, s.Off*es) }
	l.out = func(c int, s Span) Ref { return ref(RecvBuf, (c*b.stride+s.Off)*es) }
	for k := range l.m {
		s := l.span(r, k)
		b.copyLocal(l.in(r, s), l.out(r, s), s.Len*es)
		if n > 1 {
			b.emit(Step{Op: Send, To: (r + 1) % n, Src: l.in(r, s), Len: s.Len * es})
			b.ringAllGather(l, k)
		}
	}
}

// ringReduceScatter emits the n-1 reduce-scatter steps of piece k. Rank r
// ends owning block r in out. With thenGather the last step also forwards
// block r, starting the all-gather.
func (b *builder) ringReduceScatter(l ringLayout, k int, thenGather bool) {
	n, r, es := b.p.NRanks, b.p.Rank, b.p.ElemSize
	prev, next := (r+n-1)%n, (r+1)%n
	blk := func(s int) int { return ((r-s)%n + n) % n }
	c := blk(1)
	s := l.span(c, k)
	b.emit(Step{Op: Send, To: next, Src: l.in(c, s), Len: s.Len * es})
	for i := 2; i < n; i++ {
		c = blk(i)
		s = l.span(c, k)
		b.emit(Step{Op: RecvReduceSend, From: prev, To: next, Src: l.in(c, s), Dst: l.mid(c, k, s), Len: s.Len * es})
	}
	s = l.span(r, k)
	op := RecvReduce
	if thenGather {
		op = RecvReduceSend
	}
	b.emit(Step{Op: op, From: prev, To: next, Src: l.in(r, s), Dst: l.out(r, s), Len: s.Len * es})
}

// ringAllGather emits the receiving n-1 all-gather steps of piece k; the
// first send of block r has already been emitted.
func (b *builder) ringAllGather(l ringLayout, k int) {
	n, r, es := b.p.NRanks, b.p.Rank, b.p.ElemSize
	prev, next := (r+n-1)%n, (r+1)%n
	for i := 1; i < n-1; i++ {
		c := ((r-i)%n + n) % n
		s := l.span(c, k)
		b.emit(Step{Op: RecvCopySend, From: prev, To: next, Dst: l.out(c, s), Len: s.Len * es})
	}
	c := (r + 1) % n
	s := l.span(c, k)
	b.emit(Step{Op: Recv, From: prev, Dst: l.out(c, s), Len: s.Len * es})
}
