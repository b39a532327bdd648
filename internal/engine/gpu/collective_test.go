package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stagedMeet lets the Go stand-ins of the staged kernels of n ranks (each on
// its own fake GPU) meet as the real kernels do at their barriers: every
// rank posts its input, all read every rank's input, then each writes only
// its own output (as the staged kernels do), so in-place operations see
// their inputs intact.
type stagedMeet struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	fakes []*cudafake.Fake
	in    []uintptr // this round's c.In[rank] of every rank
	count int       // ranks at the barrier
	gen   uint64    // barrier generation
}

func newStagedMeet(rs []*regRank) *stagedMeet {
	fakes := make([]*cudafake.Fake, len(rs))
	for r, x := range rs {
		fakes[r] = x.f
	}
	return newMeet(fakes)
}

// newMeet is a stagedMeet of the ranks whose GPUs are fakes.
func newMeet(fakes []*cudafake.Fake) *stagedMeet {
	m := &stagedMeet{n: len(fakes), in: make([]uintptr, len(fakes)), fakes: fakes}
	m.cond = sync.NewCond(&m.mu)
	return m
}

// barrier waits (at most 10 s) until every rank has called it.
func (m *stagedMeet) barrier() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	gen := m.gen
	if m.count++; m.count == m.n {
		m.count, m.gen = 0, m.gen+1
		m.cond.Broadcast()
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for gen == m.gen {
		if time.Now().After(deadline) {
			return fmt.Errorf("stand-in kernel: %d of %d ranks arrived", m.count, m.n)
		}
		go func() { time.Sleep(10 * time.Millisecond); m.cond.Broadcast() }()
		m.cond.Wait()
	}
	return nil
}

// run is one rank's kernel: post the input, read every rank's nbytes of
// input, write the output computed from them.
func (m *stagedMeet) run(c kernels.DevComm, nbytes int, out func(all [][]byte) ([]byte, uintptr)) error {
	m.mu.Lock()
	m.in[c.Rank] = c.In[c.Rank]
	m.mu.Unlock()
	if err := m.barrier(); err != nil {
		return err
	}
	all := make([][]byte, m.n)
	for r := range m.n {
		all[r] = bytes.Clone(mem(m.fakes[r], m.in[r], nbytes))
	}
	if err := m.barrier(); err != nil {
		return err
	}
	if b, p := out(all); b != nil {
		copy(mem(m.fakes[c.Rank], p, len(b)), b)
	}
	return m.barrier()
}

func sumInt32(blocks [][]byte, off, n int) []byte {
	out := make([]byte, 4*n)
	for i := range n {
		var v int32
		for _, b := range blocks {
			v += int32(binary.LittleEndian.Uint32(b[4*(off+i):]))
		}
		binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
	}
	return out
}

// stagedStandIns registers Go versions of the staged and one-shot kernels
// (int32 sums) on every rank's fake GPU. The returned function reports how
// many times each kernel ran, on any rank.
func stagedStandIns(rs []*regRank) (ran func() map[string]int) {
	m := newStagedMeet(rs)
	var mu sync.Mutex
	runs := map[string]int{}
	count := func(c kernels.DevComm, a *cuda.Args) int { return 4 * int(a.Uint64(1)) }
	blocks := func(c kernels.DevComm, a *cuda.Args) int { return 4 * int(a.Uint64(1)) * int(c.NRanks) }
	nb := func(c kernels.DevComm, a *cuda.Args) int { return int(a.Uint64(1)) }
	type standIn struct {
		nbytes func(c kernels.DevComm, a *cuda.Args) int
		out    func(c kernels.DevComm, a *cuda.Args, all [][]byte) []byte // nil: no output on this rank
	}
	allReduce := standIn{count, func(c kernels.DevComm, a *cuda.Args, all [][]byte) []byte { return sumInt32(all, 0, int(a.Uint64(1))) }}
	reduceScatter := standIn{blocks, func(c kernels.DevComm, a *cuda.Args, all [][]byte) []byte {
		n := int(a.Uint64(1))
		return sumInt32(all, int(c.Rank)*n, n)
	}}
	reduce := standIn{count, func(c kernels.DevComm, a *cuda.Args, all [][]byte) []byte {
		if c.Rank != c.Root {
			return nil
		}
		return sumInt32(all, 0, int(a.Uint64(1)))
	}}
	allGather := standIn{nb, func(c kernels.DevComm, _ *cuda.Args, all [][]byte) []byte { return bytes.Join(all, nil) }}
	broadcast := standIn{nb, func(c kernels.DevComm, _ *cuda.Args, all [][]byte) []byte { return all[c.Root] }}
	red := func(k string) string { return "gccl_" + k + "_i32_sum" }
	standIns := map[string]standIn{
		red(kernels.AllReducePipelined): allReduce, red(kernels.AllReduceOneShot): allReduce, red(kernels.AllReducePush): allReduce,
		red(kernels.ReduceScatterStaged): reduceScatter, red(kernels.ReduceScatterOneShot): reduceScatter,
		red(kernels.ReduceStaged): reduce, red(kernels.ReduceOneShot): reduce,
		kernels.AllGatherStaged: allGather, kernels.AllGatherOneShot: allGather,
		kernels.BroadcastStaged: broadcast, kernels.BroadcastOneShot: broadcast,
	}
	for _, x := range rs {
		bulk := uint64(x.g.set.BulkBytes)
		for name, k := range standIns {
			scratch := uint64(gpuplan.DirectBytes) // one-shot and push kernels use the direct area
			if strings.Contains(name, "staged") || strings.Contains(name, "pipelined") {
				scratch = bulk
			}
			x.f.RegisterKernel(name, func(_ *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
				c := decodeWholeComm(a.Arg(0))
				if c.ScratchBytes != scratch {
					return fmt.Errorf("%s launched with a %d-byte scratch, want %d", name, c.ScratchBytes, scratch)
				}
				mu.Lock()
				runs[name]++
				mu.Unlock()
				return m.run(c, k.nbytes(c, a), func(all [][]byte) ([]byte, uintptr) { return k.out(c, a, all), c.Out[c.Rank] })
			})
		}
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(runs)
	}
}

// copyTwin registers the Go twin of the copy kernel (kernels.Copy) on x's
// fake GPU; it fails a launch on another grid than gpuplan.CopyGrid's.
func copyTwin(x *regRank) {
	x.f.RegisterKernel(kernels.Copy, func(f *cudafake.Fake, grid, block cuda.Dim3, a *cuda.Args) error {
		c, nb := decodeWholeComm(a.Arg(0)), int(a.Uint64(1))
		if int(grid.X) != gpuplan.CopyGrid(nb) || block.X != kernels.Threads {
			return fmt.Errorf("copy of %d bytes launched on %d blocks of %d threads, want %d of %d",
				nb, grid.X, block.X, gpuplan.CopyGrid(nb), kernels.Threads)
		}
		copy(mem(f, c.Out[c.Rank], nb), mem(f, c.In[c.Rank], nb))
		return nil
	})
}

// TestInvalidatedCaptureKeepsCommUsable: a launch the driver refuses
// because the stream's capture was invalidated
// (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: nothing of it will run) returns
// that error but does not fail the communicator: no async error, and the
// next launch runs and is right. Any other launch failure still does.
func TestInvalidatedCaptureKeepsCommUsable(t *testing.T) {
	rs := regWorld(t, 1)
	x := rs[0]
	copyTwin(x)
	rng := rand.New(rand.NewPCG(41, 42))
	const count = 1000
	in, _ := randInt32s(rng, count)
	send, err := x.d.Alloc(8 * count)
	require.NoError(t, err)
	defer func() { require.NoError(t, x.d.Free(send)) }()
	recv := send + 4*count
	x.put(t, send, in)
	o := engine.Op{Kind: algo.AllReduce, Count: count, Type: gccl.Int32, Op: gccl.Sum, Send: send, Recv: recv, Stream: x.s}

	invalidated := cuda.NewError("cuLaunchKernel", cuda.ErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture")
	x.drv.failLaunch.Store(&invalidated)
	err = x.e.Launch([]engine.Op{o})
	require.ErrorIs(t, err, cuda.ErrorStreamCaptureInvalidated)
	require.NoError(t, x.e.AsyncError(), "an invalidated capture's launch does not fail the communicator")
	x.put(t, recv, bytes.Repeat([]byte{0xA5}, 4*count))
	launchAll(t, rs, func(int) engine.Op { return o })
	require.Equal(t, in, x.get(t, recv, 4*count), "the next launch")

	other := cuda.NewError("cuLaunchKernel", cuda.ErrorIllegalAddress, "an illegal memory access was encountered")
	x.drv.failLaunch.Store(&other)
	require.ErrorIs(t, x.e.Launch([]engine.Op{o}), cuda.ErrorIllegalAddress)
	require.ErrorIs(t, x.e.AsyncError(), cuda.ErrorIllegalAddress, "any other launch failure fails the communicator")
}

// TestStagedCollectives runs every collective on buffers that are not
// registered (one-shot up to gpuplan.LLMax, the push all-reduce up to
// gpuplan.PushMax, staged above) through the engine on fake GPUs, in and out of
// place, with random inputs, roots and poisoned outputs, and checks every
// element on every rank: the engine passes each rank's buffers, root and
// counts as the kernels expect them.
func TestStagedCollectives(t *testing.T) {
	const n = 3
	rs := regWorld(t, n)
	ran := stagedStandIns(rs)
	rng := rand.New(rand.NewPCG(11, 12))
	counts := []int{1, 1001, 100_000, 1_100_000} // int32: 4 B and 4 KB one-shot, 400 KB push or staged, 4.4 MB staged
	for _, count := range counts {
		for _, inPlace := range []bool{false, true} {
			for _, k := range []algo.Kind{algo.AllReduce, algo.ReduceScatter, algo.Reduce, algo.AllGather, algo.Broadcast} {
				t.Run(fmt.Sprintf("%v/count=%d/inplace=%v", k, count, inPlace), func(t *testing.T) {
					runStaged(t, rs, rng, k, count, inPlace)
				})
			}
		}
	}
	red := func(k string) string { return "gccl_" + k + "_i32_sum" }
	const ll, big = 2 * 2 * n, 2 * 2 * n // two counts each, in and out of place, every rank
	assert.Equal(t, map[string]int{
		red(kernels.AllReduceOneShot): ll, red(kernels.AllReducePush): big / 2, red(kernels.AllReducePipelined): big / 2,
		red(kernels.ReduceScatterOneShot): ll, red(kernels.ReduceScatterStaged): big,
		red(kernels.ReduceOneShot): ll, red(kernels.ReduceStaged): big,
		kernels.AllGatherOneShot: ll, kernels.AllGatherStaged: big,
		kernels.BroadcastOneShot: ll, kernels.BroadcastStaged: big,
	}, ran())
	for r, x := range rs {
		assert.Zero(t, x.e.Stats().ZeroCopyOps, "rank %d", r)
		assert.NotZero(t, x.e.Stats().StagedBytes, "rank %d", r)
	}
}

// runStaged launches one op of kind k on every rank and checks the outputs.
func runStaged(t *testing.T, rs []*regRank, rng *rand.Rand, k algo.Kind, count int, inPlace bool) {
	n, root := len(rs), rng.IntN(len(rs))
	o := engine.Op{Kind: k, Count: count, Type: gccl.Int32, Op: gccl.Sum, Root: root}
	sendLen, recvLen := o.Sizes(n)
	in := make([][]byte, n)
	sends, recvs := make([]uintptr, n), make([]uintptr, n)
	for r, x := range rs {
		in[r], _ = randInt32s(rng, sendLen/4)
		buf, err := x.d.Alloc(sendLen + recvLen)
		require.NoError(t, err)
		t.Cleanup(func() { _ = x.d.Free(buf) })
		x.put(t, buf, bytes.Repeat([]byte{0xA5}, sendLen+recvLen))
		sends[r], recvs[r] = buf, buf+uintptr(sendLen)
		if inPlace { // where NCCL puts sendbuff inside recvbuff
			recvs[r] = buf
			switch k {
			case algo.AllGather:
				sends[r] = buf + uintptr(r*sendLen)
			case algo.ReduceScatter:
				recvs[r] = buf + uintptr(r*recvLen)
			}
		}
		x.put(t, sends[r], in[r])
	}
	launchAll(t, rs, func(r int) engine.Op {
		op := o
		op.Send, op.Recv = sends[r], recvs[r]
		return op
	})
	for r, x := range rs {
		var want []byte
		switch k {
		case algo.AllReduce:
			want = sumInt32(in, 0, count)
		case algo.ReduceScatter:
			want = sumInt32(in, r*count, count)
		case algo.Reduce:
			if r != root {
				continue
			}
			want = sumInt32(in, 0, count)
		case algo.AllGather:
			want = bytes.Join(in, nil)
		case algo.Broadcast:
			want = in[root]
		}
		require.Equal(t, want, x.get(t, recvs[r], len(want)), "rank %d", r)
	}
}

// TestSingleRankCopies: on a one-rank communicator a collective with a
// built-in operator does nothing in place, is one copy node when captured
// (no kernel), launches the copy kernel (on its own grid) eagerly below
// gpuplan.SingleCopyMin and is one copy (no kernel) eagerly from there;
// every element of the poisoned output is checked, and LastGPUPath names
// the path.
func TestSingleRankCopies(t *testing.T) {
	rs := regWorld(t, 1)
	x := rs[0]
	copyTwin(x)
	rng := rand.New(rand.NewPCG(31, 32))
	run := func(k algo.Kind, op gccl.RedOp, mode string) {
		count := 1 + rng.IntN(5000)
		switch mode {
		case "eager large":
			count += gpuplan.SingleCopyMin / 4
		case "eager mid": // past one block per 8 KiB up to the grid's cap
			count += rng.IntN(gpuplan.SingleCopyMin / 4)
		}
		in, _ := randInt32s(rng, count)
		send, err := x.d.Alloc(8 * count)
		require.NoError(t, err)
		defer func() { require.NoError(t, x.d.Free(send)) }()
		recv := send + uintptr(4*count)
		if mode == "in place" {
			recv = send
		}
		x.put(t, recv, bytes.Repeat([]byte{0xA5}, 4*count))
		x.put(t, send, in)
		o := engine.Op{Kind: k, Count: count, Type: gccl.Int32, Op: op, Send: send, Recv: recv, Stream: x.s}
		before := x.drv.launches.Load()
		if mode != "captured" {
			launchAll(t, rs, func(int) engine.Op { return o })
		} else {
			cs := cuda.Stream(x.s)
			require.NoError(t, x.f.StreamBeginCapture(cs, cuda.CaptureModeGlobal))
			require.NoError(t, x.e.Launch([]engine.Op{o}))
			g, err := x.f.StreamEndCapture(cs)
			require.NoError(t, err)
			exec, err := x.f.GraphInstantiate(g)
			require.NoError(t, err)
			require.NoError(t, x.f.GraphDestroy(g))
			require.NoError(t, x.f.GraphLaunch(exec, cs))
			require.NoError(t, x.d.Synchronize(x.s))
			require.NoError(t, x.f.GraphExecDestroy(exec))
		}
		want, path := int64(0), map[string]string{"in place": PathNone, "captured": PathCopy, "eager large": PathCopy}[mode]
		if mode == "eager" || mode == "eager mid" {
			want, path = 1, kernels.Copy
		}
		require.Equal(t, want, x.drv.launches.Load()-before, "%v %v %s: kernel launches", k, op, mode)
		require.Equal(t, path, x.e.LastGPUPath(), "%v %v %s", k, op, mode)
		require.Equal(t, in, x.get(t, recv, 4*count), "%v %v %s", k, op, mode)
	}
	for _, k := range []algo.Kind{algo.AllReduce, algo.ReduceScatter, algo.Reduce, algo.AllGather, algo.Broadcast} {
		for _, op := range []gccl.RedOp{gccl.Sum, gccl.Prod, gccl.Max, gccl.Min, gccl.Avg} {
			run(k, op, "in place")
			run(k, op, "captured")
			run(k, op, "eager large")
			run(k, op, "eager")
		}
		run(k, gccl.Sum, "eager mid")
	}
}
