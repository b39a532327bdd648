package gpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Groups on fake GPUs through the full GPU backend (peer-mapped buffers,
// which the gccl_p2p emulation moves the point-to-point data through) with
// a one-shot all-reduce stand-in whose ranks meet per communicator, as the
// kernels do: a kernel that waits for a peer's kernel queued behind
// another one on the peer's stream waits until the timeout.

// gpuRank is one rank's fake GPU and stream, shared by the communicators
// of a test.
type gpuRank struct {
	f *cudafake.Fake
	d *device.CUDADevice
	s gccl.Stream
}

// meetings finds the meeting of a communicator's all-reduce stand-ins by
// one rank's fake GPU and that rank's counters.
type meetings struct {
	mu  sync.Mutex
	of  map[meetKey]*stagedMeet
	ran atomic.Int64 // stand-in all-reduces run, on any rank
}

type meetKey struct {
	f    *cudafake.Fake
	ctrs uintptr
}

func (ms *meetings) get(f *cudafake.Fake, ctrs uintptr) *stagedMeet {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.of[meetKey{f, ctrs}]
}

// gpuRanks makes n fake GPUs with a stream each; every communicator made
// on them (newGPUComm) meets in ms.
func gpuRanks(t *testing.T, n int) ([]*gpuRank, *meetings) {
	ms := &meetings{of: map[meetKey]*stagedMeet{}}
	rs := make([]*gpuRank, n)
	for r := range n {
		f := cudafake.New(cudafake.Config{MemBytes: 128 << 20})
		registerP2PKernel(f, new(atomic.Int64))
		f.RegisterKernel("gccl_"+kernels.AllReduceOneShot+"_i32_sum", func(f *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
			c, count := decodeWholeComm(a.Arg(0)), int(a.Uint64(1))
			m := ms.get(f, c.Counters)
			if m == nil {
				return fmt.Errorf("all-reduce stand-in: no communicator has counters %#x", c.Counters)
			}
			ms.ran.Add(1)
			return m.run(c, 4*count, func(all [][]byte) ([]byte, uintptr) { return sumInt32(all, 0, count), c.Out[c.Rank] })
		})
		d := openGPU(t, f)
		s, err := d.NewStream()
		require.NoError(t, err)
		rs[r] = &gpuRank{f: f, d: d, s: s}
	}
	return rs, ms
}

// newGPUComm makes a communicator over rs whose engines have ID id: the
// GPU backend with every peer's buffer mapped through the fakes' IPC.
func newGPUComm(t *testing.T, rs []*gpuRank, ms *meetings, id uint64) []*engine.Engine {
	n := len(rs)
	net := enginetest.NewNet(n)
	gs, offers := make([]*Backend, n), make([]peermem.Offer, n)
	for r, x := range rs {
		g := newBackendState(x.d, testSetup(r, n, net.Rank(r), x.d), Config{})
		g.set.BulkBytes = 4 << 20 // small fake GPUs
		require.NoError(t, x.d.Do(func() error {
			if err := g.allocate([]byte("stand-in kernels")); err != nil {
				return err
			}
			var err error
			offers[r], err = peermem.NewOffer(g.drv, x.d.Ordinal(), topo.HostHash(), g.buf, g.set.BufBytes())
			return err
		}))
		gs[r] = g
	}
	es, errs := make([]*engine.Engine, n), make([]error, n)
	var wg sync.WaitGroup
	for r, x := range rs {
		wg.Go(func() {
			boot := net.Rank(r)
			if es[r], errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: boot, Device: x.d, ID: id,
				Timeout: 10 * time.Second, Backend: use(gs[r])}); errs[r] == nil {
				errs[r] = gs[r].exchange(context.Background(), boot, offers[r])
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		gs[r].setBase()
	}
	t.Cleanup(func() {
		for _, e := range es {
			assert.NoError(t, e.Close())
		}
	})
	crossMapBackends(t, gs)
	fakes := make([]*cudafake.Fake, n)
	for r, x := range rs {
		fakes[r] = x.f
	}
	m := newMeet(fakes)
	ms.mu.Lock()
	for r, g := range gs {
		ms.of[meetKey{rs[r].f, g.ctrs}] = m
	}
	ms.mu.Unlock()
	return es
}

// groupData builds the ops of groups on a world of gpuRanks: random
// inputs every rank can recompute from (seed, rank), poisoned outputs, and
// a check of every element of every output.
type groupData struct {
	t      *testing.T
	rs     []*gpuRank
	checks []func() error
}

func (g *groupData) input(seed uint64, rank, count int) []byte {
	b, _ := randInt32s(rand.New(rand.NewPCG(seed, uint64(rank))), count)
	return b
}

func (g *groupData) alloc(r int, content []byte) uintptr {
	x := g.rs[r]
	p, err := x.d.Alloc(len(content))
	require.NoError(g.t, err)
	g.t.Cleanup(func() { _ = x.d.Free(p) })
	require.NoError(g.t, x.d.CopyIn(p, content))
	return p
}

func poison(n int) []byte { return bytes.Repeat([]byte{0xA5}, n) }

// expect records a check that the n bytes at p on rank r become want().
func (g *groupData) expect(r int, what string, p uintptr, want func() []byte) {
	g.checks = append(g.checks, func() error {
		w := want()
		got := make([]byte, len(w))
		if err := g.rs[r].d.CopyOut(got, p); err != nil {
			return err
		}
		for i := 0; i < len(w); i += 4 {
			if !bytes.Equal(got[i:i+4], w[i:i+4]) {
				return fmt.Errorf("rank %d %s: element %d is %d, want %d", r, what, i/4,
					int32(binary.LittleEndian.Uint32(got[i:])), int32(binary.LittleEndian.Uint32(w[i:])))
			}
		}
		return nil
	})
}

// allReduce is rank r's out-of-place sum of count int32 (inputs from
// seed) on s; it returns the output buffer.
func (g *groupData) allReduce(r int, seed uint64, count int, s gccl.Stream) (engine.Op, uintptr) {
	send, recv := g.alloc(r, g.input(seed, r, count)), g.alloc(r, poison(4*count))
	g.expect(r, fmt.Sprintf("all-reduce %d", seed), recv, func() []byte {
		all := make([][]byte, len(g.rs))
		for q := range all {
			all[q] = g.input(seed, q, count)
		}
		return sumInt32(all, 0, count)
	})
	return engine.Op{Kind: algo.AllReduce, Send: send, Recv: recv, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: s}, recv
}

// send is rank r's send of count int32 (from seed) to peer on s.
func (g *groupData) send(r, peer int, seed uint64, count int, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.P2PSend, Send: g.alloc(r, g.input(seed, r, count)), Count: count, Type: gccl.Int32, Peer: peer, Stream: s}
}

// recv is rank r's matching receive from peer on s, checked.
func (g *groupData) recv(r, peer int, seed uint64, count int, s gccl.Stream) engine.Op {
	p := g.alloc(r, poison(4*count))
	g.expect(r, fmt.Sprintf("receive %d from %d", seed, peer), p, func() []byte { return g.input(seed, peer, count) })
	return engine.Op{Kind: algo.P2PRecv, Recv: p, Count: count, Type: gccl.Int32, Peer: peer, Stream: s}
}

func (g *groupData) check() error {
	for _, c := range g.checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// adds is one rank's group: its communicators in the order it added them.
type adds struct {
	order []*engine.Engine
	ops   map[*engine.Engine][]engine.Op
}

func (a *adds) add(e *engine.Engine, o engine.Op) {
	if a.ops == nil {
		a.ops = map[*engine.Engine][]engine.Op{}
	}
	if _, ok := a.ops[e]; !ok {
		a.order = append(a.order, e)
	}
	a.ops[e] = append(a.ops[e], o)
}

func (a *adds) works() []engine.Work {
	var ws []engine.Work
	for _, e := range a.order {
		ws = append(ws, engine.Work{Engine: e, Ops: a.ops[e]})
	}
	return ws
}

// syncAll waits for every rank's streams and engines.
func syncAll(rs []*gpuRank, streams [][]gccl.Stream, engines ...[]*engine.Engine) error {
	for r, x := range rs {
		for _, s := range streams[r] {
			if err := x.d.Synchronize(s); err != nil {
				return fmt.Errorf("rank %d stream %#x: %w", r, s, err)
			}
		}
	}
	for _, es := range engines {
		for r, e := range es {
			if err := e.AsyncError(); err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
		}
	}
	return nil
}

// TestGroupAnyCommOrder: every rank runs one group over communicators A
// and B on its one stream, the ranks adding them in different orders; as
// in NCCL a group is one call, so only each communicator's own order must
// match across ranks. B's ID sorts first, so ranks that add A first are
// reordered. Before, each rank enqueued its communicators' kernels in the
// order it added them: a kernel of A waited for a peer's kernel of A
// queued behind one of B, which waited for this rank's B (timeout).
func TestGroupAnyCommOrder(t *testing.T) {
	const count, big = 1000, 50_000
	cases := []struct {
		name string
		n    int
		add  func(g *groupData, a *adds, r int, ea, eb *engine.Engine, s gccl.Stream)
	}{
		{"send-then-collectives", 3, func(g *groupData, a *adds, r int, ea, eb *engine.Engine, s gccl.Stream) {
			switch r { // ranks 0 and 1 add A first, rank 2 adds B first
			case 1:
				a.add(ea, g.send(r, 0, 7, count, s))
			case 0:
				a.add(ea, g.recv(r, 1, 7, count, s))
			}
			opB, _ := g.allReduce(r, 8, count, s)
			a.add(eb, opB)
			opA, _ := g.allReduce(r, 9, count, s)
			a.add(ea, opA)
		}},
		{"odd-ranks-B-first", 4, func(g *groupData, a *adds, r int, ea, eb *engine.Engine, s gccl.Stream) {
			opA, _ := g.allReduce(r, 10, count, s)
			opB, _ := g.allReduce(r, 11, count, s)
			if r%2 == 1 {
				a.add(eb, opB)
				a.add(ea, opA)
			} else {
				a.add(ea, opA)
				a.add(eb, opB)
			}
		}},
		{"pipeline", 4, func(g *groupData, a *adds, r int, ea, eb *engine.Engine, s gccl.Stream) {
			// Rank r sends to r+1 on A when r is even, on B when odd, and
			// receives from r-1 on the other.
			out, in := ea, eb
			if r%2 == 1 {
				out, in = eb, ea
			}
			a.add(out, g.send(r, (r+1)%4, 12, big, s))
			a.add(in, g.recv(r, (r+3)%4, 12, big, s))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, ms := gpuRanks(t, c.n)
			ea, eb := newGPUComm(t, rs, ms, 2), newGPUComm(t, rs, ms, 1)
			g := &groupData{t: t, rs: rs}
			streams := make([][]gccl.Stream, c.n)
			for r, x := range rs {
				var a adds
				c.add(g, &a, r, ea[r], eb[r], x.s) // one stream for both
				require.NoError(t, engine.LaunchGroup(a.works()), "rank %d", r)
				streams[r] = []gccl.Stream{x.s}
			}
			require.NoError(t, syncAll(rs, streams, ea, eb))
			require.NoError(t, g.check())
		})
	}
}

// TestGroupOneCommSeveralStreams: one communicator's ops in a group on two
// streams (NCCL >= 2.20): the launch waits for the work enqueued before it
// on the other stream, and work enqueued later there waits for the launch
// (it reads the all-reduce's result). Before, the core refused the second
// stream on the GPU backend.
func TestGroupOneCommSeveralStreams(t *testing.T) {
	const n, count = 3, 1000
	rs, ms := gpuRanks(t, n)
	es := newGPUComm(t, rs, ms, 1)
	g := &groupData{t: t, rs: rs}
	second := make([]gccl.Stream, n)
	opens := make([]func(), n)
	copies := make([]uintptr, n)
	streams := make([][]gccl.Stream, n)
	for r, x := range rs {
		s2, err := x.d.NewStream()
		require.NoError(t, err)
		t.Cleanup(func() { _ = x.d.DestroyStream(s2) })
		second[r], streams[r] = s2, []gccl.Stream{s2, x.s}
		opens[r] = enginetest.Gate(t, x.f, x.d, s2) // the other stream's earlier work
		ar, out := g.allReduce(r, 20, count, x.s)
		ops := []engine.Op{ar, g.send(r, (r+1)%n, 21, count, s2), g.recv(r, (r+n-1)%n, 21, count, x.s)}
		require.NoError(t, engine.LaunchGroup([]engine.Work{{Engine: es[r], Ops: ops}}), "rank %d", r)
		// Later work on the other stream: a copy of the all-reduce's result.
		copies[r] = g.alloc(r, poison(4*count))
		require.NoError(t, x.d.Do(func() error { return x.f.MemcpyDtoDAsync(copies[r], out, 4*count, cuda.Stream(s2)) }))
		g.expect(r, "copy of the all-reduce on the other stream", copies[r], func() []byte {
			all := make([][]byte, n)
			for q := range all {
				all[q] = g.input(20, q, count)
			}
			return sumInt32(all, 0, count)
		})
	}
	time.Sleep(50 * time.Millisecond)
	assert.Zero(t, ms.ran.Load(), "an all-reduce ran before its other stream's earlier work")
	opens[0]()
	time.Sleep(50 * time.Millisecond)
	done, err := rs[0].d.Query(second[0])
	require.NoError(t, err)
	assert.False(t, done, "rank 0's other stream ran past the launch, which waits for ranks 1 and 2")
	for _, open := range opens[1:] {
		open()
	}
	for r, x := range rs { // the other streams first: they wait for the launch
		require.NoError(t, x.d.Synchronize(second[r]), "rank %d", r)
	}
	require.NoError(t, syncAll(rs, streams, es))
	require.NoError(t, g.check())
}

// TestGroupSeveralStreamsCaptured: a group on two streams captured into
// one graph (the second stream forked into the capture and joined back)
// replays right; a capture on one of the streams only is
// gccl.ErrInvalidUsage naming both, refused before anything is enqueued
// (the communicator stays usable).
func TestGroupSeveralStreamsCaptured(t *testing.T) {
	const n, count = 3, 1000
	rs, ms := gpuRanks(t, n)
	es := newGPUComm(t, rs, ms, 1)
	g := &groupData{t: t, rs: rs}
	execs := make([]cuda.GraphExec, n)
	streams := make([][]gccl.Stream, n)
	for r, x := range rs {
		s2, err := x.d.NewStream()
		require.NoError(t, err)
		t.Cleanup(func() { _ = x.d.DestroyStream(s2) })
		streams[r] = []gccl.Stream{x.s, s2}
		ev, err := x.f.EventCreate(cuda.EventDisableTiming)
		require.NoError(t, err)
		t.Cleanup(func() { _ = x.f.EventDestroy(ev) })
		s1, s2c := cuda.Stream(x.s), cuda.Stream(s2)

		// Only s1 captures: refused, naming both streams.
		require.NoError(t, x.f.StreamBeginCapture(s1, cuda.CaptureModeRelaxed))
		bad := []engine.Op{g.send(r, (r+1)%n, 30, 8, s2), g.send(r, (r+n-1)%n, 30, 8, x.s)}
		err = engine.LaunchGroup([]engine.Work{{Engine: es[r], Ops: bad}})
		require.ErrorIs(t, err, gccl.ErrInvalidUsage)
		assert.Contains(t, err.Error(), fmt.Sprintf("%#x", uintptr(x.s)))
		assert.Contains(t, err.Error(), fmt.Sprintf("%#x", uintptr(s2)))
		empty, err := x.f.StreamEndCapture(s1)
		require.NoError(t, err)
		require.NoError(t, x.f.GraphDestroy(empty))
		require.NoError(t, es[r].AsyncError())

		require.NoError(t, x.f.StreamBeginCapture(s1, cuda.CaptureModeRelaxed))
		require.NoError(t, x.f.EventRecord(ev, s1))
		require.NoError(t, x.f.StreamWaitEvent(s2c, ev)) // fork s2 into the capture
		ar, _ := g.allReduce(r, 31, count, x.s)
		ops := []engine.Op{g.send(r, (r+1)%n, 32, count, s2), ar, g.recv(r, (r+n-1)%n, 32, count, x.s)}
		require.NoError(t, engine.LaunchGroup([]engine.Work{{Engine: es[r], Ops: ops}}), "rank %d", r)
		require.NoError(t, x.f.EventRecord(ev, s2c))
		require.NoError(t, x.f.StreamWaitEvent(s1, ev)) // join it back
		graph, err := x.f.StreamEndCapture(s1)
		require.NoError(t, err, "rank %d: every stream joined back", r)
		execs[r], err = x.f.GraphInstantiate(graph)
		require.NoError(t, err)
		require.NoError(t, x.f.GraphDestroy(graph))
		t.Cleanup(func() { _ = x.f.GraphExecDestroy(execs[r]) })
	}
	assert.Zero(t, ms.ran.Load(), "captured, not run")
	for r, x := range rs {
		require.NoError(t, x.f.GraphLaunch(execs[r], cuda.Stream(x.s)))
	}
	require.NoError(t, syncAll(rs, streams, es))
	require.NoError(t, g.check())
}
