package gpu

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/require"
)

// premulStandIns registers Go versions of the int32 premulsum kernels the
// engine may launch for unregistered buffers (one-shot, push, staged) on
// every rank's fake GPU. Each reads its rank's factor as the real kernels
// do, when it runs: from scalarPtr in device memory, else from the low bits
// of scalarBits; it scales its own input, and the ranks sum the scaled
// inputs (Σ_r s_r·x_r). The zero-copy kernels are missing on purpose: the
// engine must not choose them for premulsum.
func premulStandIns(rs []*regRank) {
	m := newStagedMeet(rs)
	posted := make([][]int32, len(rs))
	type shape struct{ perRank, block bool } // input is nranks blocks; output only at root
	kinds := map[string]shape{
		kernels.AllReduceOneShot: {}, kernels.AllReducePush: {}, kernels.AllReducePipelined: {},
		kernels.ReduceScatterOneShot: {perRank: true}, kernels.ReduceScatterStaged: {perRank: true},
		kernels.ReduceOneShot: {block: true}, kernels.ReduceStaged: {block: true},
	}
	for _, x := range rs {
		for k, sh := range kinds {
			x.f.RegisterKernel("gccl_"+k+"_i32_premulsum", func(f *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
				c, count := decodeWholeComm(a.Arg(0)), int(a.Uint64(1))
				s := int32(a.Uint64(2))
				if p := uintptr(a.Uint64(3)); p != 0 {
					s = int32(binary.LittleEndian.Uint32(mem(f, p, 4)))
				}
				n := count
				if sh.perRank {
					n *= int(c.NRanks)
				}
				in := mem(f, c.In[c.Rank], 4*n)
				mine := make([]int32, n)
				for i := range mine {
					mine[i] = s * int32(binary.LittleEndian.Uint32(in[4*i:]))
				}
				m.mu.Lock()
				posted[c.Rank] = mine
				m.mu.Unlock()
				if err := m.barrier(); err != nil {
					return err
				}
				off := 0
				if sh.perRank {
					off = int(c.Rank) * count
				}
				if !sh.block || c.Rank == c.Root {
					out := mem(f, c.Out[c.Rank], 4*count)
					for i := range count {
						var v int32
						for _, p := range posted {
							v += p[off+i]
						}
						binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
					}
				}
				return m.barrier()
			})
		}
	}
}

// premulBuffers gives every rank an int32 input of n elements all r+1 and
// a poisoned output of count elements, and an operator with scalar r+2:
// engine.ScalarDevice on odd ranks (the scalar in device memory, returned), host
// immediate on even ones.
func premulBuffers(t *testing.T, rs []*regRank, n, count int) (sends, recvs, scalars []uintptr, ops []gccl.RedOp) {
	for r, x := range rs {
		buf, err := x.d.Alloc(4*(n+count) + 8)
		require.NoError(t, err)
		t.Cleanup(func() { _ = x.d.Free(buf) })
		in := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(in[4*i:], uint32(r+1))
		}
		x.put(t, buf, in)
		poison := make([]byte, 4*count)
		for i := range poison {
			poison[i] = 0xA5
		}
		x.put(t, buf+uintptr(4*n), poison)
		sp := buf + uintptr(4*(n+count))
		x.put(t, sp, binary.LittleEndian.AppendUint32(nil, uint32(r+2)))
		res, p := engine.ScalarDevice, sp
		if r%2 == 0 {
			res = engine.ScalarHostImmed
			p = hostScalarPtr(t, uint32(r+2))
		}
		op, err := x.e.CreatePreMulSum(p, gccl.Int32, res)
		require.NoError(t, err)
		sends, recvs, scalars, ops = append(sends, buf), append(recvs, buf+uintptr(4*n)), append(scalars, sp), append(ops, op)
	}
	return sends, recvs, scalars, ops
}

// hostScalarPtr is the address of a host int32 holding v, kept alive until
// the test ends.
func hostScalarPtr(t *testing.T, v uint32) uintptr {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, v)
	t.Cleanup(func() { runtime.KeepAlive(b) })
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// checkInt32s requires every one of count int32 at p on x to be want.
func checkInt32s(t *testing.T, x *regRank, p uintptr, count int, want int32, what string) {
	got := x.get(t, p, 4*count)
	for i := range count {
		require.Equal(t, want, int32(binary.LittleEndian.Uint32(got[4*i:])), "%s element %d", what, i)
	}
}

// TestGPUPreMulSumPerRank: 3 ranks, inputs r+1, scalars r+2 (odd ranks'
// in device memory), so every result is 2+6+12 = 20, for AllReduce,
// ReduceScatter and Reduce through the one-shot, push and staged kernels;
// every rank destroys its operator right after Launch returns, before its
// stream runs the kernel.
func TestGPUPreMulSumPerRank(t *testing.T) {
	rs := regWorld(t, 3)
	premulStandIns(rs)
	for _, count := range []int{1001, 100_000, 1_100_000} {
		for _, k := range []algo.Kind{algo.AllReduce, algo.ReduceScatter, algo.Reduce} {
			n := count
			if k == algo.ReduceScatter {
				n *= len(rs)
			}
			sends, recvs, _, ops := premulBuffers(t, rs, n, count)
			for r, x := range rs {
				o := engine.Op{Kind: k, Send: sends[r], Recv: recvs[r], Count: count, Type: gccl.Int32, Op: ops[r], Root: 1, Stream: x.s}
				require.NoError(t, x.e.Launch([]engine.Op{o}), "rank %d", r)
				require.NoError(t, x.e.DestroyRedOp(ops[r]))
			}
			for r, x := range rs {
				require.NoError(t, x.d.Synchronize(x.s), "rank %d", r)
				require.NoError(t, x.e.AsyncError(), "rank %d", r)
				if k != algo.Reduce || r == 1 {
					checkInt32s(t, x, recvs[r], count, 20, fmt.Sprintf("%v count %d rank %d", k, count, r))
				}
			}
		}
	}
}

// TestGPUPreMulSumDeviceScalarInGraph: a premulsum all-reduce captured in
// a global-mode capture reads the engine.ScalarDevice scalar when the graph runs,
// not when it was captured: changing the scalar between replays changes
// the result (the launch read it with a synchronous copy before, frozen
// into the graph).
func TestGPUPreMulSumDeviceScalarInGraph(t *testing.T) {
	rs := regWorld(t, 2)
	premulStandIns(rs)
	const count = 1001
	sends, recvs, scalars, ops := premulBuffers(t, rs, count, count)
	execs := make([]cuda.GraphExec, len(rs))
	for r, x := range rs {
		cs := cuda.Stream(x.s)
		require.NoError(t, x.f.StreamBeginCapture(cs, cuda.CaptureModeGlobal))
		o := engine.Op{Kind: algo.AllReduce, Send: sends[r], Recv: recvs[r], Count: count, Type: gccl.Int32, Op: ops[r], Stream: x.s}
		require.NoError(t, x.e.Launch([]engine.Op{o}), "rank %d", r)
		g, err := x.f.StreamEndCapture(cs)
		require.NoError(t, err)
		execs[r], err = x.f.GraphInstantiate(g)
		require.NoError(t, err)
		require.NoError(t, x.f.GraphDestroy(g))
		t.Cleanup(func() { _ = x.f.GraphExecDestroy(execs[r]) })
	}
	for _, s1 := range []int32{3, 7} { // rank 1's device scalar; rank 0's is 2 (host)
		rs[1].put(t, scalars[1], binary.LittleEndian.AppendUint32(nil, uint32(s1)))
		for r, x := range rs {
			require.NoError(t, x.f.GraphLaunch(execs[r], cuda.Stream(x.s)))
		}
		for r, x := range rs {
			require.NoError(t, x.d.Synchronize(x.s), "rank %d", r)
			checkInt32s(t, x, recvs[r], count, 1*2+2*s1, fmt.Sprintf("scalar %d rank %d", s1, r))
		}
	}
}
