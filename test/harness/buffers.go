package harness

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// Poison is the byte every output buffer holds before an operation.
const Poison = 0xA5

// PoisonBytes returns n bytes of Poison.
func PoisonBytes(n int) []byte { return bytes.Repeat([]byte{Poison}, n) }

// tileElems is the period of Input's values: a large input repeats its
// first tileElems random elements (an odd period, prime, so that blocks and
// chunks never line up with it), which keeps making inputs cheap.
const tileElems = 65521

// Input is rank's input for a test case: random values of type t that
// every process can recompute from (seed, rank).
func Input(seed uint64, rank int, t gccl.DataType, count int) []byte {
	b := make([]byte, count*t.Size())
	tile := b[:min(count, tileElems)*t.Size()]
	reduce.Fill(tile, t, rand.New(rand.NewPCG(seed, uint64(rank)+1)))
	for off := len(tile); off < len(b); off += len(tile) {
		copy(b[off:], tile)
	}
	return b
}

// Inputs returns the inputs of ranks 0..nranks-1.
func Inputs(seed uint64, nranks int, t gccl.DataType, count int) [][]byte {
	in := make([][]byte, nranks)
	var wg sync.WaitGroup
	for r := range in { // one goroutine per rank: 64 MiB inputs take a while each
		wg.Go(func() { in[r] = Input(seed, r, t, count) })
	}
	wg.Wait()
	return in
}

// Buffers owns allocations and streams of one device and frees them after
// the test.
type Buffers struct {
	t *testing.T
	d device.Device
}

// NewBuffers returns the Buffers of device d for test t.
func NewBuffers(t *testing.T, d device.Device) *Buffers { return &Buffers{t: t, d: d} }

// Alloc returns n bytes of device memory (at least one byte) holding
// content, or Poison where content does not reach.
func (b *Buffers) Alloc(n int, content []byte) uintptr {
	b.t.Helper()
	p, err := b.d.Alloc(max(n, 1))
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = b.d.Free(p) })
	host := PoisonBytes(max(n, 1))
	copy(host, content)
	require.NoError(b.t, b.d.CopyIn(p, host))
	return p
}

// Read copies n bytes from device memory at p.
func (b *Buffers) Read(p uintptr, n int) []byte {
	b.t.Helper()
	out := make([]byte, n)
	if n > 0 {
		require.NoError(b.t, b.d.CopyOut(out, p))
	}
	return out
}

// Stream makes a stream destroyed after the test.
func (b *Buffers) Stream() gccl.Stream {
	b.t.Helper()
	s, err := b.d.NewStream()
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = b.d.DestroyStream(s) })
	return s
}

// Scratch is device memory reused case after case: one allocation that
// grows to the largest case, so a matrix of thousands of cases allocates a
// handful of times. Outgrown allocations are freed only after the test
// (freeing waits for the whole device, and with ranks sharing a GPU a
// peer's kernel may be waiting for this rank). Use a Scratch from one
// goroutine, for one case at a time (after the previous one's wait).
type Scratch struct {
	d       device.Device
	p       uintptr
	size    int
	retired []uintptr
}

// NewScratch returns an empty Scratch on d, freed after the test.
func NewScratch(t testing.TB, d device.Device) *Scratch {
	sc := &Scratch{d: d}
	t.Cleanup(sc.free)
	return sc
}

// scratchAlign keeps the second buffer of a Pair 256-byte aligned.
const scratchAlign = 256

// Pair returns two buffers of a and b bytes (b may be 0), each at least
// one byte, valid until the next Pair.
func (sc *Scratch) Pair(a, b int) (uintptr, uintptr, error) {
	off := (max(a, 1) + scratchAlign - 1) / scratchAlign * scratchAlign
	if need := off + max(b, 1); need > sc.size {
		size := (need + 1<<20 - 1) &^ (1<<20 - 1)
		p, err := sc.d.Alloc(size)
		if err != nil {
			return 0, 0, err
		}
		if sc.size > 0 {
			sc.retired = append(sc.retired, sc.p)
		}
		sc.p, sc.size = p, size
	}
	return sc.p, sc.p + uintptr(off), nil
}

// Fill copies content to device memory at p.
func (sc *Scratch) Fill(p uintptr, content []byte) error {
	if len(content) == 0 {
		return nil
	}
	return sc.d.CopyIn(p, content)
}

// Poison sets n bytes at p to Poison, on the device.
func (sc *Scratch) Poison(p uintptr, n int) error {
	if n == 0 {
		return nil
	}
	return device.Memset(sc.d, p, Poison, n)
}

// Read copies n bytes from device memory at p.
func (sc *Scratch) Read(p uintptr, n int) ([]byte, error) {
	out := make([]byte, n)
	if n == 0 {
		return out, nil
	}
	return out, sc.d.CopyOut(out, p)
}

func (sc *Scratch) free() {
	if sc.size > 0 {
		sc.retired = append(sc.retired, sc.p)
	}
	for _, p := range sc.retired {
		_ = sc.d.Free(p)
	}
	sc.p, sc.size, sc.retired = 0, 0, nil
}
