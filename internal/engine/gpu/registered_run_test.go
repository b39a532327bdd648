package gpu

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/internal/engine/gpu/regs"
	"github.com/gccl/gccl/internal/regcache"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const chunkBytes = 1 << 20

// chunks allocates and registers one large chunk per rank.
func chunks(t *testing.T, rs []*regRank) ([]uintptr, []*regcache.Handle) {
	ptrs := make([]uintptr, len(rs))
	for r, x := range rs {
		p, err := x.d.Alloc(chunkBytes)
		require.NoError(t, err)
		t.Cleanup(func() { _ = x.d.Free(p) })
		ptrs[r] = p
	}
	return ptrs, register(t, rs, ptrs, chunkBytes)
}

// zeroCopyWorld is regWorld with the one-shot kernels off (as
// GCCL_PROTO=^LL turns them off): they take every operation up to the LL
// limit, registered or not, and these tests use small counts to exercise
// the zero-copy kernels.
func zeroCopyWorld(t *testing.T, n int) []*regRank {
	rs := regWorld(t, n)
	for _, x := range rs {
		x.g.set.Protos &^= 1 << algo.LL
	}
	return rs
}

// launchAll launches op(r) on every rank and waits for the streams.
func launchAll(t *testing.T, rs []*regRank, op func(r int) engine.Op) {
	for r, x := range rs {
		o := op(r)
		o.Stream = x.s
		require.NoError(t, x.e.Launch([]engine.Op{o}), "rank %d", r)
	}
	for r, x := range rs {
		require.NoError(t, x.d.Synchronize(x.s), "rank %d", r)
		require.NoError(t, x.e.AsyncError(), "rank %d", r)
	}
}

func (x *regRank) put(t *testing.T, p uintptr, b []byte) { require.NoError(t, x.d.CopyIn(p, b)) }
func (x *regRank) get(t *testing.T, p uintptr, n int) []byte {
	b := make([]byte, n)
	require.NoError(t, x.d.CopyOut(b, p))
	return b
}

// TestZeroCopyCollectives runs every zero-copy kind, in and out of place,
// on sub-buffers of one registered chunk per rank at a random offset (the
// same on every rank), checks every element of every rank's output, and
// that nothing was staged.
func TestZeroCopyCollectives(t *testing.T) {
	const n, count = 3, 1001
	rs := zeroCopyWorld(t, n)
	base, _ := chunks(t, rs)
	rng := rand.New(rand.NewPCG(7, 8))
	off := uintptr(16 * rng.IntN(1000))
	send := func(r int) uintptr { return base[r] + off }
	recv := func(r int) uintptr { return base[r] + off + 64<<10 }
	poison := bytes.Repeat([]byte{0xA5}, 4*n*count)
	in := make([][]byte, n)
	want := make([]int32, n*count)
	for r, x := range rs {
		var v []int32
		in[r], v = randInt32s(rng, n*count)
		for i := range v {
			want[i] += v[i]
		}
		x.put(t, send(r), in[r])
		x.put(t, recv(r), poison)
	}
	wantBytes := func(lo, k int) []byte {
		b := make([]byte, 4*k)
		for i := range k {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(want[lo+i]))
		}
		return b
	}
	launchAll(t, rs, func(r int) engine.Op {
		return engine.Op{Kind: algo.AllReduce, Send: send(r), Recv: recv(r), Count: count, Type: gccl.Int32, Op: gccl.Sum}
	})
	for r, x := range rs {
		assert.Equal(t, wantBytes(0, count), x.get(t, recv(r), 4*count), "all-reduce rank %d", r)
	}
	launchAll(t, rs, func(r int) engine.Op {
		return engine.Op{Kind: algo.ReduceScatter, Send: send(r), Recv: recv(r), Count: count, Type: gccl.Int32, Op: gccl.Sum}
	})
	for r, x := range rs {
		assert.Equal(t, wantBytes(r*count, count), x.get(t, recv(r), 4*count), "reduce-scatter rank %d", r)
		x.put(t, recv(r), poison)
	}
	launchAll(t, rs, func(r int) engine.Op {
		return engine.Op{Kind: algo.AllGather, Send: send(r), Recv: recv(r), Count: count, Type: gccl.Int32}
	})
	for r, x := range rs {
		got := x.get(t, recv(r), 4*n*count)
		for p := range n {
			assert.Equal(t, in[p][:4*count], got[4*p*count:4*(p+1)*count], "all-gather rank %d block %d", r, p)
		}
	}
	for root := range n {
		for r, x := range rs {
			x.put(t, recv(r), poison)
		}
		launchAll(t, rs, func(r int) engine.Op {
			return engine.Op{Kind: algo.Broadcast, Send: send(r), Recv: recv(r), Count: count, Type: gccl.Int32, Root: root}
		})
		for r, x := range rs {
			assert.Equal(t, in[root][:4*count], x.get(t, recv(r), 4*count), "broadcast root %d rank %d", root, r)
		}
	}
	// In place: the all-reduce result lands in the send buffers.
	launchAll(t, rs, func(r int) engine.Op {
		return engine.Op{Kind: algo.AllReduce, Send: send(r), Recv: send(r), Count: count, Type: gccl.Int32, Op: gccl.Sum}
	})
	for r, x := range rs {
		assert.Equal(t, wantBytes(0, count), x.get(t, send(r), 4*count), "in-place all-reduce rank %d", r)
		st := x.e.Stats()
		assert.Zero(t, st.StagedBytes, "rank %d staged", r)
		assert.Equal(t, uint64(4+n), st.ZeroCopyOps, "rank %d", r)
	}
}

// TestZeroCopyKeysAndBounds: ranks that pass the same registration and
// offset compute one key; another offset or registration changes it; an
// op past a peer's smaller registration is gccl.ErrInvalidUsage.
func TestZeroCopyKeysAndBounds(t *testing.T) {
	const n = 2
	rs := zeroCopyWorld(t, n)
	base, _ := chunks(t, rs)
	key := func(r int, off uintptr) uint32 {
		g := rs[r].g
		o := engine.Op{Kind: algo.AllGather, Send: base[r], Recv: base[r] + off, Count: 100, Type: gccl.Int32}
		bufs, ok, err := g.regs.Find(&o)
		require.NoError(t, err)
		require.True(t, ok)
		return regs.Key(o.Kind, bufs)
	}
	assert.Equal(t, key(0, 4096), key(1, 4096))
	assert.NotEqual(t, key(0, 4096), key(1, 8192))
	assert.NotZero(t, key(0, 0))
	// Unregistered memory is staged (no zero-copy path).
	g := rs[0].g
	p, err := rs[0].d.Alloc(4096)
	require.NoError(t, err)
	_, ok, err := g.regs.Find(&engine.Op{Kind: algo.AllReduce, Send: p, Recv: p, Count: 10, Type: gccl.Int32})
	require.NoError(t, err)
	assert.False(t, ok)

	// A second registration: rank 1's is smaller than rank 0's.
	small := []uintptr{base[0] + chunkBytes/2, base[1] + chunkBytes/2}
	hs := registerSizes(t, rs, small, []int{8192, 4096})
	_, _, err = g.regs.Find(&engine.Op{Kind: algo.AllReduce, Send: small[0], Recv: small[0], Count: 2048, Type: gccl.Int32})
	require.Error(t, err)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err))
	for _, h := range hs {
		require.NoError(t, regcache.Deregister(h))
	}
}

func registerSizes(t *testing.T, rs []*regRank, ptrs []uintptr, sizes []int) []*regcache.Handle {
	hs, errs := make([]*regcache.Handle, len(rs)), make([]error, len(rs))
	done := make(chan int)
	for r, x := range rs {
		go func() { hs[r], errs[r] = x.regs.Register(ptrs[r], sizes[r]); done <- r }()
	}
	for range rs {
		<-done
	}
	for _, err := range errs {
		require.NoError(t, err)
	}
	return hs
}

// gate makes the streams wait (cuStreamWaitValue32) until open is
// called, so the ops enqueued on them meanwhile stay in flight.
func (x *regRank) gate(t *testing.T, ss ...gccl.Stream) (open func()) {
	return enginetest.Gate(t, x.f, x.d, ss...)
}

// gather launches a 16-element all-gather on x's registered chunk at
// block i (its own 4 KiB of input and output) on s.
func (x *regRank) gather(t *testing.T, base uintptr, i int, s gccl.Stream) {
	p := base + uintptr(8192*i)
	require.NoError(t, x.e.Launch([]engine.Op{{Kind: algo.AllGather, Send: p, Recv: p + 4096, Count: 16, Type: gccl.Int32, Stream: s}}))
}

// TestZeroCopyHoldsRegistration: deregistering while an op that uses the
// buffer has not passed its stream is gccl.ErrInvalidUsage; once the
// stream was synchronized it succeeds at once, with no host function
// ever enqueued; closing the communicator (the engine, then its
// registrations: regcache.Cache.Close, as comm.Close does) releases the rest.
func TestZeroCopyHoldsRegistration(t *testing.T) {
	const n = 2
	rs := zeroCopyWorld(t, n)
	base, hs := chunks(t, rs)
	open := rs[0].gate(t, rs[0].s)
	for r, x := range rs {
		x.gather(t, base[r], 0, x.s)
	}
	reg := hs[0].Registration()
	assert.Equal(t, 1, reg.Uses(), "the op in flight holds the registration")
	err := regcache.Deregister(hs[0])
	require.Error(t, err)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "%v", err)
	open()
	require.NoError(t, rs[0].d.Synchronize(rs[0].s))
	require.NoError(t, regcache.Deregister(hs[0]), "after the stream synchronized")
	for r, x := range rs {
		assert.Zero(t, x.drv.hostFuncs.Load(), "rank %d: host functions", r)
		assert.Equal(t, int64(1), x.drv.eventsMade.Load(), "rank %d: events", r)
		assert.Zero(t, x.drv.timedEvents.Load(), "rank %d: events made without EventDisableTiming", r)
	}
	require.NoError(t, rs[1].d.Synchronize(rs[1].s))
	require.NoError(t, rs[1].e.Close())
	require.NoError(t, rs[1].regs.Close())
	err = regcache.Deregister(hs[1])
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "released with its communicator: %v", err)
}

// TestZeroCopyEventPool: many all-reduces, synchronized one by one and
// then back to back, reuse a couple of events and no host function; every
// result is checked and nothing stays held.
func TestZeroCopyEventPool(t *testing.T) {
	const n, count, iters, burst = 2, 257, 20, 40
	rs := zeroCopyWorld(t, n)
	base, hs := chunks(t, rs)
	rng := rand.New(rand.NewPCG(11, 12))
	recv := func(r int) uintptr { return base[r] + 256<<10 }
	want := make([]byte, 4*count)
	round := func() {
		sum := make([]int32, count)
		for r, x := range rs {
			b, v := randInt32s(rng, count)
			for i := range v {
				sum[i] += v[i]
			}
			x.put(t, base[r], b)
			x.put(t, recv(r), bytes.Repeat([]byte{0x5A}, 4*count))
		}
		for i, v := range sum {
			binary.LittleEndian.PutUint32(want[4*i:], uint32(v))
		}
	}
	op := func(r int) engine.Op {
		return engine.Op{Kind: algo.AllReduce, Send: base[r], Recv: recv(r), Count: count, Type: gccl.Int32, Op: gccl.Sum}
	}
	for it := range iters {
		round()
		launchAll(t, rs, op)
		for r, x := range rs {
			require.Equal(t, want, x.get(t, recv(r), 4*count), "iteration %d rank %d", it, r)
		}
	}
	round()
	for range burst {
		for r, x := range rs {
			o := op(r)
			o.Stream = x.s
			require.NoError(t, x.e.Launch([]engine.Op{o}))
		}
	}
	for _, x := range rs { // every rank's stand-ins write into every rank's output
		require.NoError(t, x.d.Synchronize(x.s))
	}
	for r, x := range rs {
		assert.Equal(t, want, x.get(t, recv(r), 4*count), "after the burst, rank %d", r)
		assert.Zero(t, x.drv.hostFuncs.Load(), "rank %d: host functions", r)
		assert.LessOrEqual(t, x.drv.eventsMade.Load(), int64(2), "rank %d: events for %d ops", r, iters+burst)
		assert.Equal(t, uint64(iters+burst), x.e.Stats().ZeroCopyOps, "rank %d", r)
		assert.Zero(t, hs[r].Registration().Uses(), "rank %d: holds after sync", r)
	}
}

// TestZeroCopyStreamsHold: ops in flight on several streams each hold the
// registration (one pending hold per stream, however many ops), until
// every stream passed them; the events in use stay one per stream.
func TestZeroCopyStreamsHold(t *testing.T) {
	const n, streams, perStream = 2, 3, 5
	rs := zeroCopyWorld(t, n)
	base, hs := chunks(t, rs)
	x := rs[0]
	ss := make([]gccl.Stream, streams)
	for i := range ss {
		var err error
		ss[i], err = x.d.NewStream()
		require.NoError(t, err)
	}
	open := x.gate(t, ss...)
	for k := range perStream {
		for i, s := range ss {
			x.gather(t, base[0], i*perStream+k, s)
		}
	}
	reg := hs[0].Registration()
	assert.Equal(t, streams, reg.Uses())
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(regcache.Deregister(hs[0])))
	open()
	for _, s := range ss {
		require.NoError(t, x.d.Synchronize(s))
	}
	assert.Zero(t, reg.Uses())
	assert.Zero(t, x.drv.hostFuncs.Load())
	// One pending hold per stream, one spare, and the event that chains
	// the streams in issue order (streamChain).
	assert.LessOrEqual(t, x.drv.eventsMade.Load(), int64(streams+2), "events for %d ops", streams*perStream)
	require.NoError(t, regcache.Deregister(hs[0]))
}

// TestZeroCopyFailedQueryReleases: when the completion event cannot be
// queried (a broken stream) the hold ends rather than pinning the
// registration.
func TestZeroCopyFailedQueryReleases(t *testing.T) {
	rs := zeroCopyWorld(t, 2)
	base, hs := chunks(t, rs)
	x := rs[0]
	open := x.gate(t, x.s)
	x.gather(t, base[0], 0, x.s)
	reg := hs[0].Registration()
	require.Equal(t, 1, reg.Uses())
	x.drv.failQuery.Store(true)
	assert.Zero(t, reg.Uses(), "a failed cuEventQuery ends the hold")
	x.drv.failQuery.Store(false)
	open()
	require.NoError(t, x.d.Synchronize(x.s))
	require.NoError(t, regcache.Deregister(hs[0]))
}

// TestZeroCopyHostFuncFallback: with more streams in flight on one
// registration than it keeps pending holds for, the op past the bound is
// held by a host function instead, and everything is released once the
// streams pass.
func TestZeroCopyHostFuncFallback(t *testing.T) {
	rs := zeroCopyWorld(t, 2)
	base, hs := chunks(t, rs)
	x := rs[0]
	g := x.g
	var ss []gccl.Stream
	var open []func()
	for len(ss) < 100 && x.drv.hostFuncs.Load() == 0 {
		s, err := x.d.NewStream()
		require.NoError(t, err)
		open = append(open, x.gate(t, s))
		x.gather(t, base[0], len(ss)%(chunkBytes/8192), s)
		ss = append(ss, s)
	}
	require.Equal(t, int64(1), x.drv.hostFuncs.Load(), "no host function after %d streams", len(ss))
	assert.Equal(t, uint64(1), g.regs.HostFuncHolds())
	reg := hs[0].Registration()
	assert.Equal(t, len(ss), reg.Uses())
	for _, o := range open {
		o()
	}
	for _, s := range ss {
		require.NoError(t, x.d.Synchronize(s))
	}
	assert.Zero(t, reg.Uses())
	require.NoError(t, regcache.Deregister(hs[0]))
}

// TestRegisteredSmallOpsOneShot: up to the LL limit an operation takes the
// one-shot kernel whether its buffers are registered or not, so ranks that
// registered differently still agree (no key to check) and get the right
// result; past the limit the same registered buffers run zero-copy.
func TestRegisteredSmallOpsOneShot(t *testing.T) {
	const n, small = 2, 1001
	rs := regWorld(t, n)
	ran := stagedStandIns(rs)
	base, _ := chunks(t, rs)
	rng := rand.New(rand.NewPCG(41, 42))
	in := make([][]byte, n)
	sends, recvs := make([]uintptr, n), make([]uintptr, n)
	for r, x := range rs {
		in[r], _ = randInt32s(rng, small)
		sends[r], recvs[r] = base[r], base[r]+64<<10
		if r == 1 { // rank 1's buffers are not registered
			p, err := x.d.Alloc(2 * 4 * small)
			require.NoError(t, err)
			t.Cleanup(func() { _ = x.d.Free(p) })
			sends[r], recvs[r] = p, p+4*small
		}
		x.put(t, sends[r], in[r])
		x.put(t, recvs[r], bytes.Repeat([]byte{0xA5}, 4*small))
	}
	launchAll(t, rs, func(r int) engine.Op {
		return engine.Op{Kind: algo.AllReduce, Send: sends[r], Recv: recvs[r], Count: small, Type: gccl.Int32, Op: gccl.Sum}
	})
	for r, x := range rs {
		require.Equal(t, sumInt32(in, 0, small), x.get(t, recvs[r], 4*small), "rank %d", r)
		assert.Zero(t, x.e.Stats().ZeroCopyOps, "rank %d", r)
	}
	assert.Equal(t, map[string]int{"gccl_" + kernels.AllReduceOneShot + "_i32_sum": n}, ran())
	big := gpuplan.LLMax/4 + 3 // registered on both ranks: zero-copy
	for r, x := range rs {
		in[r], _ = randInt32s(rng, big)
		x.put(t, base[r], in[r])
	}
	launchAll(t, rs, func(r int) engine.Op {
		return engine.Op{Kind: algo.AllReduce, Send: base[r], Recv: base[r] + 256<<10, Count: big, Type: gccl.Int32, Op: gccl.Sum}
	})
	for r, x := range rs {
		require.Equal(t, sumInt32(in, 0, big), x.get(t, base[r]+256<<10, 4*big), "rank %d", r)
		assert.Equal(t, uint64(1), x.e.Stats().ZeroCopyOps, "rank %d", r)
	}
}
