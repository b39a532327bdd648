package mpi

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// poison is the byte every output buffer holds before an operation.
const poison = 0xA5

// input is rank's input for a test case: random values of type t that
// every process can recompute from (seed, rank).
func input(seed uint64, rank int, t gccl.DataType, count int) []byte {
	b := make([]byte, count*t.Size())
	reduce.Fill(b, t, rand.New(rand.NewPCG(seed, uint64(rank)+1)))
	return b
}

// inputs returns the inputs of ranks 0..nranks-1.
func inputs(seed uint64, nranks int, t gccl.DataType, count int) [][]byte {
	in := make([][]byte, nranks)
	for r := range in {
		in[r] = input(seed, r, t, count)
	}
	return in
}

// buffers owns device allocations and frees them after the test.
type buffers struct {
	t *testing.T
	d device.Device
}

func newBuffers(t *testing.T, d device.Device) *buffers { return &buffers{t: t, d: d} }

// alloc returns n bytes of device memory (at least one byte) holding
// content, or poison where content does not reach.
func (b *buffers) alloc(n int, content []byte) uintptr {
	b.t.Helper()
	p, err := b.d.Alloc(max(n, 1))
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = b.d.Free(p) })
	host := make([]byte, max(n, 1))
	for i := range host {
		host[i] = poison
	}
	copy(host, content)
	require.NoError(b.t, b.d.CopyIn(p, host))
	return p
}

// read copies n bytes from device memory at p.
func (b *buffers) read(p uintptr, n int) []byte {
	b.t.Helper()
	out := make([]byte, n)
	if n > 0 {
		require.NoError(b.t, b.d.CopyOut(out, p))
	}
	return out
}

// stream makes a stream destroyed after the test.
func (b *buffers) stream() gccl.Stream {
	b.t.Helper()
	s, err := b.d.NewStream()
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = b.d.DestroyStream(s) })
	return s
}
