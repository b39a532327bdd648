package algo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// simCase is one collective run by the simulator.
type simCase struct {
	kind         Kind
	algo         Algorithm
	n, count, es int
	root, chunk  int
	channels     int // 0 = 1
	inPlace      bool
	seed         uint64
}

func (c simCase) String() string {
	return fmt.Sprintf("%s/%s/n%d/c%d/e%d/root%d/chunk%d/ch%d/inplace=%v", c.kind, c.algo, c.n, c.count, c.es, c.root, c.chunk, c.channels, c.inPlace)
}

// sizes returns the send and receive buffer sizes of one rank.
func (c simCase) sizes() (send, recv int) {
	b := c.count * c.es
	switch c.kind {
	case AllGather:
		return b, c.n * b
	case ReduceScatter:
		return c.n * b, b
	}
	return b, b
}

// addInto is the simulator's reduction: wrapping addition of little-endian
// unsigned integers of width es, exact and order independent.
func addInto(dst, a, b []byte, es int) {
	for i := 0; i < len(dst); i += es {
		switch es {
		case 1:
			dst[i] = a[i] + b[i]
		case 2:
			binary.LittleEndian.PutUint16(dst[i:], binary.LittleEndian.Uint16(a[i:])+binary.LittleEndian.Uint16(b[i:]))
		case 4:
			binary.LittleEndian.PutUint32(dst[i:], binary.LittleEndian.Uint32(a[i:])+binary.LittleEndian.Uint32(b[i:]))
		default:
			binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(a[i:])+binary.LittleEndian.Uint64(b[i:]))
		}
	}
}

type simRank struct{ send, recv, scratch []byte }

func (r *simRank) at(ref Ref, n int) []byte {
	switch ref.Buf {
	case SendBuf:
		return r.send[ref.Off : ref.Off+n]
	case RecvBuf:
		return r.recv[ref.Off : ref.Off+n]
	case ScratchBuf:
		return r.scratch[ref.Off : ref.Off+n]
	}
	panic("step refers to no buffer")
}

// run executes one rank's plan; sends copy eagerly into the peer's queue.
func (r *simRank) run(p *Plan, q [][]chan []byte, es int) error {
	me := p.Rank
	deadline := time.After(10 * time.Second)
	for i, s := range p.Steps {
		var in []byte
		if s.Op.Receives() {
			select {
			case in = <-q[s.From][me]:
			case <-deadline:
				return fmt.Errorf("rank %d step %d (%v): no message (deadlock)", me, i, s)
			}
			if len(in) != s.Len {
				return fmt.Errorf("rank %d step %d (%v): got %d bytes", me, i, s, len(in))
			}
		}
		switch s.Op {
		case Recv, RecvCopySend:
			copy(r.at(s.Dst, s.Len), in)
		case RecvReduce, RecvReduceSend:
			addInto(r.at(s.Dst, s.Len), r.at(s.Src, s.Len), in, es)
		case Copy:
			copy(r.at(s.Dst, s.Len), r.at(s.Src, s.Len))
		case LocalReduce:
			d := r.at(s.Dst, s.Len)
			addInto(d, d, r.at(s.Src, s.Len), es)
		}
		if s.Op.Sends() {
			src := s.Src
			if s.Op != Send {
				src = s.Dst
			}
			q[me][s.To] <- bytes.Clone(r.at(src, s.Len))
		}
	}
	return nil
}

// simulate builds every rank's plan of every channel, runs them
// concurrently over in-memory queues (a set per channel, as each channel
// has its own connections; a scratch area per rank and channel) on random
// data with poisoned outputs, and checks every byte.
func simulate(t testing.TB, c simCase) {
	rng := rand.New(rand.NewPCG(c.seed, uint64(c.n)))
	nch := max(c.channels, 1)
	plans := make([][]*Plan, nch) // [channel][rank]
	for ch := range plans {
		plans[ch] = make([]*Plan, c.n)
		for r := range c.n {
			p, err := Build(Params{Kind: c.kind, Algo: c.algo, NRanks: c.n, Rank: r, Root: c.root, Count: c.count, ElemSize: c.es,
				ChunkBytes: c.chunk, Channels: c.channels, Channel: ch})
			require.NoError(t, err, c)
			plans[ch][r] = p
		}
	}
	sendSz, recvSz := c.sizes()
	ranks := make([]*simRank, c.n)
	inputs := make([][]byte, c.n)
	for r := range ranks {
		rk := &simRank{send: randBytes(rng, sendSz), recv: randBytes(rng, recvSz)}
		if c.inPlace {
			rk = inPlaceRank(c, r, rk)
		}
		inputs[r] = bytes.Clone(rk.send)
		ranks[r] = rk
	}
	before := make([][]byte, c.n)
	for r, rk := range ranks {
		before[r] = bytes.Clone(rk.recv)
	}
	errs := make(chan error, c.n*nch)
	for ch := range plans {
		q := queues(plans[ch])
		for r, rk := range ranks {
			own := &simRank{send: rk.send, recv: rk.recv, scratch: randBytes(rng, plans[ch][r].ScratchBytes)}
			go func() { errs <- own.run(plans[ch][r], q, c.es) }()
		}
	}
	for range c.n * nch {
		require.NoError(t, <-errs, c)
	}
	for r, rk := range ranks {
		want := expected(c, r, inputs, before[r])
		requireBytes(t, want, rk.recv, "%v rank %d result", c, r)
		if !c.inPlace {
			requireBytes(t, inputs[r], rk.send, "%v rank %d wrote its send buffer", c, r)
		}
	}
}

func queues(plans []*Plan) [][]chan []byte {
	n := len(plans)
	counts := make([][]int, n)
	for r, p := range plans {
		counts[r] = make([]int, n)
		for _, s := range p.Steps {
			if s.Op.Sends() {
				counts[r][s.To]++
			}
		}
	}
	q := make([][]chan []byte, n)
	for a := range q {
		q[a] = make([]chan []byte, n)
		for b := range q[a] {
			q[a][b] = make(chan []byte, counts[a][b])
		}
	}
	return q
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// inPlaceRank makes the send and receive buffers alias as NCCL defines it.
func inPlaceRank(c simCase, r int, rk *simRank) *simRank {
	b := c.count * c.es
	switch c.kind {
	case AllGather:
		copy(rk.recv[r*b:], rk.send)
		rk.send = rk.recv[r*b : (r+1)*b]
	case ReduceScatter:
		rk.recv = rk.send[r*b : (r+1)*b]
	default:
		rk.recv = rk.send
	}
	return rk
}

// expected is the reference result of rank r; prior is its receive buffer
// before the run (what must stay untouched where nothing is defined).
func expected(c simCase, r int, in [][]byte, prior []byte) []byte {
	sum := func() []byte {
		acc := bytes.Clone(in[0])
		for _, x := range in[1:] {
			addInto(acc, acc, x, c.es)
		}
		return acc
	}
	b := c.count * c.es
	switch c.kind {
	case AllReduce:
		return sum()
	case Broadcast:
		return bytes.Clone(in[c.root])
	case Reduce:
		if r == c.root {
			return sum()
		}
		return prior
	case AllGather:
		return bytes.Join(in, nil)
	default:
		return sum()[r*b : (r+1)*b]
	}
}

func TestSimulateAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kind := range []Kind{AllReduce, Broadcast, Reduce, AllGather, ReduceScatter} {
		for _, algo := range []Algorithm{Ring, Tree, Direct} {
			for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 13, 16} {
				counts := []int{0, 1, n - 1, n + 1, 37, 1000 + rng.IntN(3000)}
				if raceEnabled { // the race detector slows this 20×: keep the shape, drop sizes
					counts = []int{0, 1, n - 1, 37 + rng.IntN(200)}
				}
				for _, count := range counts {
					es := []int{1, 2, 4, 8}[rng.IntN(4)]
					chunk := []int{0, 16, 64, 1000}[rng.IntN(4)]
					c := simCase{kind: kind, algo: algo, n: n, count: count, es: es, root: rng.IntN(n),
						chunk: chunk, channels: []int{0, 1, 2, 3, 4, 16}[rng.IntN(6)], inPlace: rng.IntN(2) == 0, seed: rng.Uint64()}
					simulate(t, c)
				}
			}
		}
	}
}

// requireBytes fails at the first byte where got differs from want.
func requireBytes(t testing.TB, want, got []byte, format string, args ...any) {
	t.Helper()
	require.Len(t, got, len(want), fmt.Sprintf(format, args...))
	for i := range want {
		if want[i] != got[i] {
			require.Failf(t, "bytes differ", "%s: byte %d is %#x, want %#x", fmt.Sprintf(format, args...), i, got[i], want[i])
		}
	}
}
