package zerocopy

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// ranks is n in-process ranks, each with its Path, over an in-process
// bootstrap; buffers come from one host device.
type ranks struct {
	paths []*Path
	dev   device.Device
	seq   uint32 // collectives run
}

func newRanks(t *testing.T, n int) *ranks {
	t.Helper()
	dev, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	net := enginetest.NewNet(n)
	rs := &ranks{paths: make([]*Path, n), dev: dev}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errList := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		s := engine.Setup{Rank: r, NRanks: n, Boot: net.Rank(r), Device: dev, Timeout: 20 * time.Second, Log: slog.New(slog.DiscardHandler)}
		wg.Go(func() { rs.paths[r], errList[r] = Open(ctx, s, true) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, p := range rs.paths {
			require.NoError(t, p.Close(false))
		}
	})
	for r := range n {
		require.NoError(t, errList[r], "rank %d", r)
		require.NotNil(t, rs.paths[r], "rank %d: zero-copy must be set up between in-process ranks", r)
	}
	return rs
}

// run runs ops[r] on every rank r at once, each within timeout, and
// returns every rank's verdict and error. The arithmetic is package
// reduce's, Avg as Sum then a division.
func (rs *ranks) run(ops []engine.Op, timeout time.Duration) ([]bool, []error) {
	n := len(rs.paths)
	ran, errList := make([]bool, n), make([]error, n)
	var wg sync.WaitGroup
	for r, o := range ops {
		d := opdesc.Coll(&o, rs.seq)
		base, post := o.Op, (func([]byte) error)(nil)
		if o.Op == gccl.Avg {
			base = gccl.Sum
			post = func(p []byte) error { return reduce.Scale(p, o.Type, 1, n) }
		}
		combine := func(dst, a, b []byte) error { return reduce.Into3(dst, a, b, o.Type, base) }
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			ran[r], errList[r] = rs.paths[r].Run(ctx, &o, d, combine, post)
		})
	}
	wg.Wait()
	rs.seq++
	return ran, errList
}

// runs is the number of operations every rank ran zero-copy, summed.
func (rs *ranks) runs() uint64 {
	var total uint64
	for _, p := range rs.paths {
		ops, _ := p.Runs()
		total += ops
	}
	return total
}

// alloc returns a host-device buffer of n bytes filled with random bytes.
func (rs *ranks) alloc(t *testing.T, n int, rng *rand.Rand) (uintptr, []byte) {
	if n == 0 {
		return 0, nil
	}
	p, err := rs.dev.Alloc(n)
	require.NoError(t, err)
	t.Cleanup(func() { rs.dev.Free(p) })
	b := device.HostBytes(p, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return p, b
}

// zcCase is one collective run over every rank: inputs are random small
// int32s, outputs are poisoned with random bytes first.
type zcCase struct {
	kind    algo.Kind
	count   int
	root    int
	op      gccl.RedOp
	inPlace bool
}

func (c zcCase) String() string {
	return fmt.Sprintf("%v count=%d root=%d op=%v inplace=%v", c.kind, c.count, c.root, c.op, c.inPlace)
}

// buffers allocates rank r's buffers for c; heap=true takes them from the
// Go heap (not shareable) instead of the host device.
func (rs *ranks) buffers(t *testing.T, c zcCase, r int, rng *rand.Rand, heap bool) (send, recv uintptr, in, out []byte) {
	n := len(rs.paths)
	o := engine.Op{Kind: c.kind, Count: c.count, Type: gccl.Int32}
	sendSz, recvSz := o.Sizes(n)
	alloc := func(size int) (uintptr, []byte) {
		if heap {
			b := make([]byte, size)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			t.Cleanup(func() { _ = b[0] }) // keep it alive until the test ends
			return uintptr(unsafe.Pointer(unsafe.SliceData(b))), b
		}
		return rs.alloc(t, size, rng)
	}
	if !c.inPlace {
		send, in = alloc(sendSz)
		recv, out = alloc(recvSz)
		smallInts(in, rng)
		return send, recv, in, out
	}
	big := max(sendSz, recvSz)
	p, b := alloc(big)
	smallInts(b, rng)
	switch c.kind {
	case algo.AllGather: // send is this rank's block of recv
		return p + uintptr(r*sendSz), p, b[r*sendSz : (r+1)*sendSz], b
	case algo.ReduceScatter: // recv is this rank's block of send
		return p, p + uintptr(r*recvSz), b, b[r*recvSz : (r+1)*recvSz]
	}
	return p, p, b, b
}

// smallInts fills b with int32 values in [-1000, 1000] so sums stay exact.
func smallInts(b []byte, rng *rand.Rand) {
	for i := 0; i+4 <= len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], uint32(int32(rng.IntN(2001)-1000)))
	}
}

func i32(b []byte, i int) int32 { return int32(binary.LittleEndian.Uint32(b[4*i:])) }

func putI32(b []byte, i int, v int32) { binary.LittleEndian.PutUint32(b[4*i:], uint32(v)) }

// want is the expected output of rank r, computed with int32 arithmetic.
func (c zcCase) want(n, r int, ins [][]byte, before []byte) []byte {
	red := func(off, cnt int) []byte {
		out := make([]byte, 4*cnt)
		for i := range cnt {
			acc := i32(ins[0], off+i)
			for j := 1; j < n; j++ {
				v := i32(ins[j], off+i)
				switch c.op {
				case gccl.Max:
					acc = max(acc, v)
				default:
					acc += v
				}
			}
			if c.op == gccl.Avg {
				acc /= int32(n)
			}
			putI32(out, i, acc)
		}
		return out
	}
	switch c.kind {
	case algo.AllReduce:
		return red(0, c.count)
	case algo.Reduce:
		if r != c.root {
			return before
		}
		return red(0, c.count)
	case algo.ReduceScatter:
		return red(r*c.count, c.count)
	case algo.AllGather:
		return bytes.Join(ins, nil)
	}
	return ins[c.root]
}

// runCase runs c on every rank, heapRank (if >= 0) with Go-heap buffers,
// and returns every rank's verdict; where every rank ran it, it checks
// every element of every output.
func (rs *ranks) runCase(t *testing.T, c zcCase, rng *rand.Rand, heapRank int) []bool {
	t.Helper()
	n := len(rs.paths)
	ins, outs, befores := make([][]byte, n), make([][]byte, n), make([][]byte, n)
	ops := make([]engine.Op, n)
	for r := range n {
		sp, rp, in, out := rs.buffers(t, c, r, rng, r == heapRank)
		ins[r], outs[r] = bytes.Clone(in), out
		befores[r] = bytes.Clone(out)
		ops[r] = engine.Op{Kind: c.kind, Send: sp, Recv: rp, Count: c.count, Type: gccl.Int32, Op: c.op, Root: c.root}
	}
	ran, errList := rs.run(ops, 20*time.Second)
	for r := range n {
		require.NoError(t, errList[r], "%v rank %d", c, r)
		require.Equal(t, ran[0], ran[r], "%v: ranks 0 and %d disagree on the verdict", c, r)
	}
	if !ran[0] {
		return ran
	}
	for r := range n {
		want := c.want(n, r, ins, befores[r])
		require.Len(t, outs[r], len(want))
		if bytes.Equal(want, outs[r]) { // every element; the loop below names the first wrong one
			continue
		}
		for i := 0; i < len(want); i += 4 {
			require.Equal(t, i32(want, i/4), i32(outs[r], i/4), "%v: rank %d element %d", c, r, i/4)
		}
	}
	return ran
}
