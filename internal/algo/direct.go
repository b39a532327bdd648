package algo

// direct emits the one-step schedules in which every rank talks to every
// other rank. Sends go out first, in the order r+1, r+2, … so that not every
// rank hits rank 0 first; receives are taken in rank order so that the
// reduction order is the same on every rank.
func (b *builder) direct() {
	n, r, cnt, es, stride := b.p.NRanks, b.p.Rank, b.p.Count, b.p.ElemSize, b.stride
	peers := func(fn func(j int)) {
		for i := 1; i < n; i++ {
			fn((r + i) % n)
		}
	}
	switch b.p.Kind {
	case AllReduce:
		b.directAllReduce()
	case ReduceScatter:
		peers(func(j int) { b.emit(Step{Op: Send, To: j, Src: ref(SendBuf, j*stride*es), Len: cnt * es}) })
		b.reduceInOrder(ref(SendBuf, r*stride*es), ref(RecvBuf, 0), cnt*es)
	case AllGather:
		peers(func(j int) { b.emit(Step{Op: Send, To: j, Src: ref(SendBuf, 0), Len: cnt * es}) })
		b.copyLocal(ref(SendBuf, 0), ref(RecvBuf, r*stride*es), cnt*es)
		for j := range n {
			if j != r {
				b.emit(Step{Op: Recv, From: j, Dst: ref(RecvBuf, j*stride*es), Len: cnt * es})
			}
		}
	case Broadcast:
		if r != b.p.Root {
			b.emit(Step{Op: Recv, From: b.p.Root, Dst: ref(RecvBuf, 0), Len: cnt * es})
			return
		}
		peers(func(j int) { b.emit(Step{Op: Send, To: j, Src: ref(SendBuf, 0), Len: cnt * es}) })
		b.copyLocal(ref(SendBuf, 0), ref(RecvBuf, 0), cnt*es)
	case Reduce:
		if r != b.p.Root {
			b.emit(Step{Op: Send, To: b.p.Root, Src: ref(SendBuf, 0), Len: cnt * es})
			return
		}
		b.reduceInOrder(ref(SendBuf, 0), ref(RecvBuf, 0), cnt*es)
	}
}

// reduceInOrder receives every peer's contribution in rank order and
// reduces it with the rank's own (in) into out.
func (b *builder) reduceInOrder(in, out Ref, n int) {
	if b.p.NRanks == 1 {
		b.copyLocal(in, out, n)
		return
	}
	src := in
	for j := range b.p.NRanks {
		if j == b.p.Rank {
			continue
		}
		b.emit(Step{Op: RecvReduce, From: j, Src: src, Dst: out, Len: n})
		src = out
	}
}

// directAllReduce is the one-shot all-reduce: every rank gets every rank's
// data and reduces all of it in rank order in scratch, so that every rank
// computes bit-identical results, then copies the result out (the copy also
// makes in-place operation safe).
func (b *builder) directAllReduce() {
	n, r, bytes := b.p.NRanks, b.p.Rank, b.p.Count*b.p.ElemSize
	if n == 1 {
		b.copyLocal(ref(SendBuf, 0), ref(RecvBuf, 0), bytes)
		return
	}
	for i := 1; i < n; i++ {
		b.emit(Step{Op: Send, To: (r + i) % n, Src: ref(SendBuf, 0), Len: bytes})
	}
	acc := ref(ScratchBuf, 0)
	b.useScratch(bytes)
	for j := range n {
		switch {
		case j == 0 && j == r:
			b.copyLocal(ref(SendBuf, 0), acc, bytes)
		case j == 0:
			b.emit(Step{Op: Recv, From: j, Dst: acc, Len: bytes})
		case j == r:
			b.emit(Step{Op: LocalReduce, Src: ref(SendBuf, 0), Dst: acc, Len: bytes})
		default:
			b.emit(Step{Op: RecvReduce, From: j, Src: acc, Dst: acc, Len: bytes})
		}
	}
	b.copyLocal(acc, ref(RecvBuf, 0), bytes)
}
