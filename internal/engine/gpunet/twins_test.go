package gpunet

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/kernels"
)

// The Go twins of the ring kernels (kernels/ring/ring.cu), run by
// cudafake over its memory: they follow docs/gpunet.md's FIFO rules and
// ring steps exactly, block for block, so they are the executable spec
// that CI checks the backend (and the proxy) against. Each block of a
// grid is a goroutine, as the blocks of a kernel run concurrently.

// twinComm is what the ring kernels read of the DevComm.
type twinComm struct {
	abort, status uintptr
	timeout       time.Duration
	nranks, rank  int
	key           uint32 // the operation's key (regKey), which a ring collective's slots carry
}

func decodeComm(b []byte) twinComm {
	le := binary.LittleEndian
	w := b[4*kernels.MaxRanks*8:]
	return twinComm{abort: uintptr(le.Uint64(w[8:])), status: uintptr(le.Uint64(w[16:])), timeout: time.Duration(le.Uint64(w[24:])),
		nranks: int(le.Uint32(w[40:])), rank: int(le.Uint32(w[44:])), key: le.Uint32(w[52:])}
}

func decodeFIFO(b []byte) kernels.FIFO {
	le := binary.LittleEndian
	return kernels.FIFO{Slots: uintptr(le.Uint64(b)), Tail: uintptr(le.Uint64(b[8:])), Head: uintptr(le.Uint64(b[16:])), Sizes: uintptr(le.Uint64(b[24:]))}
}

func decodeRing(b []byte) kernels.RingDesc {
	le := binary.LittleEndian
	d := kernels.RingDesc{In: uintptr(le.Uint64(b)), Out: uintptr(le.Uint64(b[8:])), Count: le.Uint64(b[16:]), SlotBytes: le.Uint64(b[24:]),
		NSlots: int32(le.Uint32(b[32:])), NRanks: int32(le.Uint32(b[36:])), Pos: int32(le.Uint32(b[40:])), Root: int32(le.Uint32(b[44:])),
		Ranks: uintptr(le.Uint64(b[48:]))}
	for i := range d.Ch {
		at := b[56+i*64:]
		d.Ch[i] = kernels.RingConn{Send: decodeFIFO(at), Recv: decodeFIFO(at[32:])}
	}
	return d
}

func decodeP2P(b []byte) kernels.NetP2PDesc {
	le := binary.LittleEndian
	d := kernels.NetP2PDesc{SlotBytes: le.Uint64(b), NSlots: int32(le.Uint32(b[8:])), NPeers: int32(le.Uint32(b[12:]))}
	const peerBytes = 96
	for i := range d.Peers {
		q := b[16+i*peerBytes:]
		d.Peers[i] = kernels.NetPeer{Send: decodeFIFO(q), Recv: decodeFIFO(q[32:]), SendBytes: le.Uint64(q[64:]), RecvBytes: le.Uint64(q[72:]),
			SendFirst: int32(le.Uint32(q[80:])), NSend: int32(le.Uint32(q[84:])), RecvFirst: int32(le.Uint32(q[88:])), NRecv: int32(le.Uint32(q[92:]))}
	}
	at := b[16+kernels.NetP2PMaxPeers*peerBytes:]
	for i := range d.Pieces {
		d.Pieces[i] = kernels.NetPiece{Ptr: uintptr(le.Uint64(at[16*i:])), Bytes: le.Uint64(at[16*i+8:])}
	}
	return d
}

// twin is one block of a twin kernel: the fake GPU's memory and the comm.
type twin struct {
	f   *cudafake.Fake
	c   twinComm
	blk int
}

// mem is n bytes at device address p (nil for n == 0).
func (k *twin) mem(p uintptr, n int) []byte {
	if n == 0 {
		return nil
	}
	b, err := k.f.Bytes(p, n)
	if err != nil {
		panic(err)
	}
	return b
}

func (k *twin) word64(p uintptr) *uint64 { return (*uint64)(unsafe.Pointer(&k.mem(p, 8)[0])) }
func (k *twin) word32(p uintptr) *uint32 { return (*uint32)(unsafe.Pointer(&k.mem(p, 4)[0])) }

// fail is sync.cuh's fail: the first failure wins.
func (k *twin) fail(code uint32) {
	if k.c.status != 0 {
		atomic.CompareAndSwapUint32(k.word32(k.c.status), kernels.StatusOK, code)
	}
}

// twinSpin makes the twins' waits poll without sleeping, yielding the P
// between polls, as a GPU polls: the latency benchmarks set it. Tests
// leave it off: the 20 µs sleeps leave a small machine's CPUs to the
// proxies and the providers.
var twinSpin atomic.Bool

// waiter is sync.cuh's Waiter: abort, another failure, or the timeout
// end a wait.
type waiter struct {
	k             *twin
	start         time.Time
	abort, status *uint32 // the words, looked up at the first poll (nil: none)
}

func (w *waiter) keepGoing() bool {
	if w.start.IsZero() {
		w.start = time.Now()
		if w.k.c.abort != 0 {
			w.abort = w.k.word32(w.k.c.abort)
		}
		if w.k.c.status != 0 {
			w.status = w.k.word32(w.k.c.status)
		}
	}
	if twinSpin.Load() {
		runtime.Gosched()
	} else {
		time.Sleep(20 * time.Microsecond)
	}
	if w.abort != nil && atomic.LoadUint32(w.abort) != 0 {
		w.k.fail(kernels.StatusAborted)
		return false
	}
	if w.status != nil && atomic.LoadUint32(w.status) != kernels.StatusOK {
		return false
	}
	if w.k.c.timeout != 0 && time.Since(w.start) > w.k.c.timeout {
		w.k.fail(kernels.StatusTimeout)
		return false
	}
	return true
}

// fifo is ring.cu's Fifo: a block's position in one FIFO.
type fifo struct {
	f          kernels.FIFO
	pos, other uint64
}

func (k *twin) openSend(f kernels.FIFO) fifo {
	return fifo{f: f, pos: atomic.LoadUint64(k.word64(f.Tail)), other: atomic.LoadUint64(k.word64(f.Head))}
}

func (k *twin) openRecv(f kernels.FIFO) fifo {
	return fifo{f: f, pos: atomic.LoadUint64(k.word64(f.Head)), other: atomic.LoadUint64(k.word64(f.Tail))}
}

// waitSlots is ring.cu's waitSlots: a free send slot (s non-nil) and a
// full receive slot (r non-nil) whose size must be expect.
func (k *twin) waitSlots(s, r *fifo, nslots, slotBytes int, expect int) (snd, rcv []byte, ok bool) {
	w := waiter{k: k}
	if s != nil && s.pos-s.other >= uint64(nslots) {
		head := k.word64(s.f.Head) // looked up once: the fake's lookup is slower than a poll
		for s.pos-s.other >= uint64(nslots) {
			s.other = atomic.LoadUint64(head)
			if s.pos-s.other >= uint64(nslots) && !w.keepGoing() {
				return nil, nil, false
			}
		}
	}
	if s != nil {
		snd = k.mem(s.f.Slots+uintptr(s.pos%uint64(nslots))*uintptr(slotBytes), slotBytes)
	}
	if r != nil && r.other <= r.pos {
		tail := k.word64(r.f.Tail)
		for r.other <= r.pos {
			r.other = atomic.LoadUint64(tail)
			if r.other <= r.pos && !w.keepGoing() {
				return nil, nil, false
			}
		}
	}
	if r != nil {
		i := uintptr(r.pos % uint64(nslots))
		rcv = k.mem(r.f.Slots+i*uintptr(slotBytes), slotBytes)
		if size := atomic.LoadUint32(k.word32(r.f.Sizes + 4*i)); int(size) != expect {
			k.fail(kernels.StatusBadUsage)
			return nil, nil, false
		}
	}
	return snd, rcv, true
}

// postSlots is ring.cu's postSlots: the send slot's size, then its tail;
// the receive slot's head.
func (k *twin) postSlots(s, r *fifo, nslots, bytes int) {
	if s != nil {
		atomic.StoreUint32(k.word32(s.f.Sizes+4*uintptr(s.pos%uint64(nslots))), uint32(bytes))
		s.pos++
		atomic.StoreUint64(k.word64(s.f.Tail), s.pos)
	}
	if r != nil {
		r.pos++
		atomic.StoreUint64(k.word64(r.f.Head), r.pos)
	}
}

// ring is ring.cu's Ring: one block's channel.
type ring struct {
	*twin
	d    kernels.RingDesc
	s, r fifo
}

// ringPad and ringWire are ring.cu's: a ring collective's slot of b data
// bytes carries its key trailer at ringPad(b) and travels as ringWire(b).
func ringPad(b int) int  { return (b + 15) / 16 * 16 }
func ringWire(b int) int { return ringPad(b) + kernels.RingTrailerBytes }

// keyOK is ring.cu's check of a received slot's key trailer (its size,
// ringWire(b), was checked by waitSlots).
func (g *ring) keyOK(slot []byte, b int) bool {
	if binary.LittleEndian.Uint32(slot[ringPad(b):]) == g.c.key {
		return true
	}
	g.fail(kernels.StatusBadUsage)
	return false
}

// putKey is ring.cu's putKey: the launch's key trailer after b data bytes.
func (g *ring) putKey(slot []byte, b int) {
	t := slot[ringPad(b) : ringPad(b)+kernels.RingTrailerBytes]
	clear(t)
	binary.LittleEndian.PutUint32(t, g.c.key)
}

// slotData is ring.cu's ringData(d.slotBytes).
func (g *ring) slotData() int { return kernels.RingSlotData(int(g.d.SlotBytes)) }

func (g *ring) step(send, recv bool, bytes int, fn func(snd, rcv []byte)) bool {
	var s, r *fifo
	if send {
		s = &g.s
	}
	if recv {
		r = &g.r
	}
	snd, rcv, ok := g.waitSlots(s, r, int(g.d.NSlots), int(g.d.SlotBytes), ringWire(bytes))
	if !ok || rcv != nil && !g.keyOK(rcv, bytes) {
		return false
	}
	full := snd
	if snd != nil {
		snd = snd[:bytes]
	}
	if rcv != nil {
		rcv = rcv[:bytes]
	}
	fn(snd, rcv)
	if full != nil {
		g.putKey(full, bytes)
	}
	g.postSlots(s, r, int(g.d.NSlots), ringWire(bytes))
	return true
}

// mover is ring.cu's RingMove over byte slices: d = a (scaled) (+) b,
// post applied when fin, stored to d0 and d1 (either may be nil).
type mover struct {
	t      gccl.DataType
	op     gccl.RedOp // Sum for Avg and PreMulSum
	avg    bool
	scalar []byte // PreMulSum's factor, nil otherwise
	n      int
}

func (m mover) run(a, b, d0, d1 []byte, fin bool) {
	var acc []byte
	switch {
	case a != nil:
		acc = append([]byte(nil), a...)
		if m.scalar != nil {
			must(reduce.MulScalar(acc, m.t, m.scalar))
		}
		if b != nil {
			must(reduce.Into3(acc, acc, b, m.t, m.op))
		}
	default:
		acc = append([]byte(nil), b...)
	}
	if fin && m.avg {
		must(reduce.Scale(acc, m.t, 1, m.n))
	}
	copy(d0, acc)
	copy(d1, acc)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func ringMod(x, n int) int { return ((x % n) + n) % n }

// rankAt is d.ranks[q] of ring.cu: the rank at ring position q, whose
// block of reduce-scatter and all-gather position q owns.
func (g *ring) rankAt(q int) int {
	return int(binary.LittleEndian.Uint32(g.mem(g.d.Ranks+uintptr(4*q), 4)))
}

// channelSlice and byteSlice are common.cuh's and reduce.cuh's.
func channelSlice(count, es, grid, blk int) (b, e int) {
	align := 16 / es
	per := (count + grid - 1) / grid
	per = (per + align - 1) / align * align
	b = min(count, per*blk)
	return b, min(count, b+per)
}

func byteSlice(nbytes, grid, blk int) (b, e int) { return channelSlice(nbytes, 1, grid, blk) }

func roundChunk(n, nranks, slotElems, es int) int {
	align := 16 / es
	ce := (n + nranks - 1) / nranks
	ce = (ce + align - 1) / align * align
	return min(ce, slotElems)
}

func (g *ring) allReduce(m mover, es, grid int) {
	n, p := int(g.d.NRanks), int(g.d.Pos)
	slotElems := g.slotData() / es
	b, e := channelSlice(int(g.d.Count), es, grid, g.blk)
	in := func(i, l int) []byte { return g.mem(g.d.In+uintptr(i*es), l*es) }
	out := func(i, l int) []byte { return g.mem(g.d.Out+uintptr(i*es), l*es) }
	for rb := b; rb < e; {
		ce := roundChunk(e-rb, n, slotElems, es)
		re := min(e, rb+ce*n)
		chunk := func(k int) (int, int) { cb := min(re, rb+ce*k); return cb, min(re, cb+ce) }
		cb, cend := chunk(p)
		if !g.step(true, false, (cend-cb)*es, func(snd, _ []byte) { m.run(in(cb, cend-cb), nil, snd, nil, false) }) {
			return
		}
		for j := 1; j < n; j++ {
			cb, cend := chunk(ringMod(p-j, n))
			last := j == n-1
			if !g.step(true, true, (cend-cb)*es, func(snd, rcv []byte) {
				var d1 []byte
				if last {
					d1 = out(cb, cend-cb)
				}
				m.run(in(cb, cend-cb), rcv, snd, d1, last)
			}) {
				return
			}
		}
		for j := 1; j < n; j++ {
			cb, cend := chunk(ringMod(p+1-j, n))
			if !g.step(j < n-1, true, (cend-cb)*es, func(snd, rcv []byte) { copy(out(cb, cend-cb), rcv); copy(snd, rcv) }) {
				return
			}
		}
		rb = re
	}
}

// allReduceGather is ring_allreduce_gather: every rank's (scaled) input
// travels the ring in one slot; the n-1 received slots are kept, then
// reduced with this rank's in rank order, rounding to the type at each
// step, and freed.
func (g *ring) allReduceGather(m mover, es, grid int) {
	n, p := int(g.d.NRanks), int(g.d.Pos)
	count := int(g.d.Count)
	bytes, nslots, slot := count*es, int(g.d.NSlots), int(g.d.SlotBytes)
	if grid != 1 || n < 2 || n > kernels.RingGatherMaxRanks || n-1 > nslots || ringWire(bytes) > slot {
		g.fail(kernels.StatusBadArgs)
		return
	}
	in := g.mem(g.d.In, bytes)
	own := make([]byte, bytes)
	m.run(in, nil, own, nil, false) // scaled, as sent
	if !g.step(true, false, bytes, func(snd, _ []byte) { copy(snd, own) }) {
		return
	}
	src := make([][]byte, n)
	src[g.rankAt(p)] = own
	for j := 1; j < n; j++ {
		var s *fifo
		if j < n-1 {
			s = &g.s
		}
		snd, rcv, ok := g.waitSlots(s, &g.r, nslots, slot, ringWire(bytes))
		if !ok || !g.keyOK(rcv, bytes) {
			return
		}
		src[g.rankAt(ringMod(p-j, n))] = rcv[:bytes]
		g.r.pos++ // kept
		if s != nil {
			copy(snd, rcv[:bytes])
			g.putKey(snd, bytes)
			g.postSlots(s, nil, nslots, ringWire(bytes))
		}
	}
	acc := append([]byte(nil), src[0]...)
	for r := 1; r < n; r++ {
		must(reduce.Into3(acc, acc, src[r], m.t, m.op))
	}
	if m.avg {
		must(reduce.Scale(acc, m.t, 1, m.n))
	}
	copy(g.mem(g.d.Out, bytes), acc)
	atomic.StoreUint64(g.word64(g.r.f.Head), g.r.pos)
}

func (g *ring) reduceScatter(m mover, es, grid int) {
	n, p := int(g.d.NRanks), int(g.d.Pos)
	slotElems := g.slotData() / es
	count := int(g.d.Count)
	b, e := channelSlice(count, es, grid, g.blk)
	in := func(blk, i, l int) []byte { return g.mem(g.d.In+uintptr((blk*count+i)*es), l*es) }
	for rb := b; rb < e; {
		re := min(e, rb+slotElems)
		l := re - rb
		if !g.step(true, false, l*es, func(snd, _ []byte) { m.run(in(g.rankAt(ringMod(p-1, n)), rb, l), nil, snd, nil, false) }) {
			return
		}
		for j := 1; j < n; j++ {
			blk := g.rankAt(ringMod(p-1-j, n))
			last := j == n-1
			if !g.step(!last, true, l*es, func(snd, rcv []byte) {
				d0 := snd
				if last {
					d0 = g.mem(g.d.Out+uintptr(rb*es), l*es)
				}
				m.run(in(blk, rb, l), rcv, d0, nil, last)
			}) {
				return
			}
		}
		rb = re
	}
}

func (g *ring) reduceTo(m mover, es, grid int) {
	n := int(g.d.NRanks)
	q := ringMod(int(g.d.Pos)-int(g.d.Root)-1, n)
	slotElems := g.slotData() / es
	b, e := channelSlice(int(g.d.Count), es, grid, g.blk)
	for pb := b; pb < e; {
		pe := min(e, pb+slotElems)
		l := pe - pb
		a := g.mem(g.d.In+uintptr(pb*es), l*es)
		var ok bool
		switch {
		case q == 0:
			ok = g.step(true, false, l*es, func(snd, _ []byte) { m.run(a, nil, snd, nil, false) })
		case q < n-1:
			ok = g.step(true, true, l*es, func(snd, rcv []byte) { m.run(a, rcv, snd, nil, false) })
		default:
			ok = g.step(false, true, l*es, func(_, rcv []byte) { m.run(a, rcv, g.mem(g.d.Out+uintptr(pb*es), l*es), nil, true) })
		}
		if !ok {
			return
		}
		pb = pe
	}
}

func (g *ring) allGather(grid int) {
	n, p := int(g.d.NRanks), int(g.d.Pos)
	nbytes := int(g.d.Count)
	b, e := byteSlice(nbytes, grid, g.blk)
	for rb := b; rb < e; {
		re := min(e, rb+g.slotData())
		l := re - rb
		minePtr, srcPtr := g.d.Out+uintptr(g.rankAt(p)*nbytes+rb), g.d.In+uintptr(rb)
		if !g.step(true, false, l, func(snd, _ []byte) {
			copy(snd, g.mem(srcPtr, l))
			if minePtr != srcPtr {
				copy(g.mem(minePtr, l), g.mem(srcPtr, l))
			}
		}) {
			return
		}
		for j := 1; j < n; j++ {
			blk := g.rankAt(ringMod(p-j, n))
			if !g.step(j < n-1, true, l, func(snd, rcv []byte) { copy(g.mem(g.d.Out+uintptr(blk*nbytes+rb), l), rcv); copy(snd, rcv) }) {
				return
			}
		}
		rb = re
	}
}

func (g *ring) broadcast(grid int) {
	n := int(g.d.NRanks)
	q := ringMod(int(g.d.Pos)-int(g.d.Root), n)
	b, e := byteSlice(int(g.d.Count), grid, g.blk)
	for pb := b; pb < e; {
		pe := min(e, pb+g.slotData())
		l := pe - pb
		dst := g.d.Out + uintptr(pb)
		var ok bool
		if q == 0 {
			src := g.d.In + uintptr(pb)
			ok = g.step(true, false, l, func(snd, _ []byte) {
				copy(snd, g.mem(src, l))
				if dst != src {
					copy(g.mem(dst, l), g.mem(src, l))
				}
			})
		} else {
			ok = g.step(q < n-1, true, l, func(snd, rcv []byte) { copy(g.mem(dst, l), rcv); copy(snd, rcv) })
		}
		if !ok {
			return
		}
		pb = pe
	}
}

// blocks runs body for every block of grid concurrently and waits.
func blocks(f *cudafake.Fake, grid cuda.Dim3, c twinComm, body func(k *twin)) error {
	var wg sync.WaitGroup
	for b := range int(grid.X) {
		wg.Go(func() { body(&twin{f: f, c: c, blk: b}) })
	}
	wg.Wait()
	return nil
}

// registerTwins registers the twins of every ring kernel on f.
func registerTwins(f *cudafake.Fake) {
	ringKernel := func(run func(g *ring, grid int)) cudafake.Kernel {
		return func(f *cudafake.Fake, grid, _ cuda.Dim3, a *cuda.Args) error {
			c, d := decodeComm(a.Arg(0)), decodeRing(a.Arg(1))
			return blocks(f, grid, c, func(k *twin) {
				g := &ring{twin: k, d: d}
				g.s, g.r = k.openSend(d.Ch[k.blk].Send), k.openRecv(d.Ch[k.blk].Recv)
				run(g, int(grid.X))
			})
		}
	}
	f.RegisterKernel(kernels.RingAllGather, ringKernel(func(g *ring, grid int) { g.allGather(grid) }))
	f.RegisterKernel(kernels.RingBroadcast, ringKernel(func(g *ring, grid int) { g.broadcast(grid) }))
	ops := append(gccl.RedOps(), gccl.NumBuiltinOps)
	for t := gccl.DataType(0); t < 32; t++ {
		for _, op := range ops {
			for _, fam := range []string{kernels.RingAllReduce, kernels.RingReduceScatter, kernels.RingReduce, kernels.RingAllReduceGather} {
				name, err := kernels.ReductionName(fam, t, op)
				if err != nil {
					continue
				}
				es := t.Size()
				f.RegisterKernel(name, func(f *cudafake.Fake, grid, _ cuda.Dim3, a *cuda.Args) error {
					c, d := decodeComm(a.Arg(0)), decodeRing(a.Arg(1))
					m := mover{t: t, op: op, n: int(d.NRanks)}
					if op == gccl.Avg || op >= gccl.NumBuiltinOps {
						m.op, m.avg = gccl.Sum, op == gccl.Avg
					}
					if op >= gccl.NumBuiltinOps {
						if p := uintptr(a.Uint64(3)); p != 0 {
							sb, err := f.Bytes(p, es)
							if err != nil {
								return err
							}
							m.scalar = append([]byte(nil), sb...)
						} else {
							m.scalar = binary.LittleEndian.AppendUint64(nil, a.Uint64(2))[:es]
						}
					}
					return blocks(f, grid, c, func(k *twin) {
						g := &ring{twin: k, d: d}
						g.s, g.r = k.openSend(d.Ch[k.blk].Send), k.openRecv(d.Ch[k.blk].Recv)
						switch fam {
						case kernels.RingAllReduce:
							g.allReduce(m, es, int(grid.X))
						case kernels.RingReduceScatter:
							g.reduceScatter(m, es, int(grid.X))
						case kernels.RingAllReduceGather:
							g.allReduceGather(m, es, int(grid.X))
						default:
							g.reduceTo(m, es, int(grid.X))
						}
					})
				})
			}
		}
	}
	f.RegisterKernel(kernels.NetP2P, func(f *cudafake.Fake, grid, _ cuda.Dim3, a *cuda.Args) error {
		c, d := decodeComm(a.Arg(0)), decodeP2P(a.Arg(1))
		return blocks(f, grid, c, func(k *twin) { k.netP2P(&d) })
	})
}

// netStream is ring.cu's netStream: bytes [b, e) of the stream of pieces
// [first, first+n), gathered into buf or scattered from it.
func (k *twin) netStream(d *kernels.NetP2PDesc, first, n int, b, e int, buf []byte, gather bool) {
	pos := 0
	for i := first; i < first+n && pos < e; i++ {
		pc := d.Pieces[i]
		l := int(pc.Bytes)
		lo, hi := max(pos, b), min(pos+l, e)
		if lo < hi {
			dev := k.mem(pc.Ptr+uintptr(lo-pos), hi-lo)
			if gather {
				copy(buf[lo-b:], dev)
			} else {
				copy(dev, buf[lo-b:hi-b])
			}
		}
		pos += l
	}
}

// netP2P is gccl_net_p2p's block: 2j sends peer j's stream, 2j+1
// receives one, a slot at a time.
func (k *twin) netP2P(d *kernels.NetP2PDesc) {
	j := k.blk / 2
	if j >= int(d.NPeers) || j >= kernels.NetP2PMaxPeers {
		return
	}
	pr := &d.Peers[j]
	sending := k.blk%2 == 0
	var f fifo
	total := int(pr.RecvBytes)
	if sending {
		f, total = k.openSend(pr.Send), int(pr.SendBytes)
	} else {
		f = k.openRecv(pr.Recv)
	}
	slot, nslots := int(d.SlotBytes), int(d.NSlots)
	for b := 0; b < total; b += slot {
		e := min(total, b+slot)
		if sending {
			snd, _, ok := k.waitSlots(&f, nil, nslots, slot, 0)
			if !ok {
				return
			}
			k.netStream(d, int(pr.SendFirst), int(pr.NSend), b, e, snd, true)
			k.postSlots(&f, nil, nslots, e-b)
		} else {
			_, rcv, ok := k.waitSlots(nil, &f, nslots, slot, e-b)
			if !ok {
				return
			}
			k.netStream(d, int(pr.RecvFirst), int(pr.NRecv), b, e, rcv, false)
			k.postSlots(nil, &f, nslots, 0)
		}
	}
}
