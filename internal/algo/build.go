package algo

import (
	"fmt"
	"math"
)

// DefaultChunkBytes is the pipeline piece size used when Params.ChunkBytes is 0.
const DefaultChunkBytes = 512 << 10

// Params describes one rank's part of one collective.
type Params struct {
	Kind     Kind
	Algo     Algorithm // Auto is not accepted here: call Choose first
	NRanks   int
	Rank     int
	Root     int // Broadcast and Reduce only
	Count    int // elements: per rank for AllGather (send) and ReduceScatter (recv), else total
	ElemSize int // bytes per element
	// ChunkBytes bounds the bytes per pipeline piece and block (0 = DefaultChunkBytes).
	ChunkBytes int
	// Channels cuts the collective into this many parts that run at once,
	// each over its own connections (0 = 1; at most MaxChannels), and
	// Channel is the part this plan moves: the elements
	// ChannelPart(Count, ElemSize, Channels, Channel) of Count (of each
	// rank's block for AllGather and ReduceScatter). Its refs still index
	// the whole buffers; its scratch is its own.
	Channels, Channel int
}

// MaxChannels bounds Params.Channels.
const MaxChannels = 16

// ChannelPart is channel c's share of count elements of elemSize bytes
// cut into channels parts: consecutive, as even as AlignBytes allows.
func ChannelPart(count, elemSize, channels, c int) Span {
	if channels <= 1 {
		return Span{0, count}
	}
	return Split(count, channels, alignElems(elemSize))[c]
}

// ChannelBytes is the least a channel moves per rank: a collective runs
// on one more channel for every ChannelBytes × nranks of data. Each
// channel has its own goroutine, connections and scratch, so it must carry
// enough to pay for them; on 16 cores, across 2 simulated hosts, all-reduce
// of 256 KiB-1 MiB took 1.2-1.8× Open MPI's time with one channel per
// 512 KiB chunk per rank (a single channel up to 1 MiB) and 0.5-1.0× with
// one per 64 KiB (docs/perf-notes.md, fourteenth session).
const ChannelBytes = 64 << 10

// NumChannels is how many of at most most channels a collective of bytes
// (as Choose counts them) over nranks ranks runs on: one per ChannelBytes
// per rank, at least 1. It does not depend on the pipeline chunk: a
// channel's part is cut into chunks of Params.ChunkBytes as before. Every
// rank computes the same.
func NumChannels(bytes, nranks, most int) int {
	return max(1, min(most, bytes/(ChannelBytes*max(nranks, 1))))
}

func (p *Params) validate() error {
	switch {
	case !p.Kind.IsCollective():
		return fmt.Errorf("unknown collective %d", int(p.Kind))
	case p.Algo != Ring && p.Algo != Tree && p.Algo != Direct:
		return fmt.Errorf("algorithm %v has no step schedule; pick ring, tree or direct", p.Algo)
	case p.NRanks < 1:
		return fmt.Errorf("nranks %d < 1", p.NRanks)
	case p.Rank < 0 || p.Rank >= p.NRanks:
		return fmt.Errorf("rank %d out of range [0,%d)", p.Rank, p.NRanks)
	case p.Kind.Rooted() && (p.Root < 0 || p.Root >= p.NRanks):
		return fmt.Errorf("root %d out of range [0,%d)", p.Root, p.NRanks)
	case p.Count < 0:
		return fmt.Errorf("count %d < 0", p.Count)
	case p.ElemSize < 1 || p.ElemSize > 64:
		return fmt.Errorf("element size %d out of range [1,64]", p.ElemSize)
	case p.ChunkBytes < 0:
		return fmt.Errorf("chunk bytes %d < 0", p.ChunkBytes)
	case p.Channels < 0 || p.Channels > MaxChannels:
		return fmt.Errorf("channels %d out of range [0,%d]", p.Channels, MaxChannels)
	case p.Channel < 0 || p.Channel >= max(p.Channels, 1):
		return fmt.Errorf("channel %d out of range [0,%d)", p.Channel, max(p.Channels, 1))
	}
	total := p.Count
	if p.Kind == AllGather || p.Kind == ReduceScatter {
		if total > math.MaxInt/p.NRanks {
			return fmt.Errorf("count %d × %d ranks overflows", p.Count, p.NRanks)
		}
		total *= p.NRanks
	}
	if total > math.MaxInt/p.ElemSize {
		return fmt.Errorf("count %d × element size %d overflows", total, p.ElemSize)
	}
	return nil
}

// Build returns the schedule of rank p.Rank. Tree is not defined for
// AllGather and ReduceScatter; Build uses Ring for them instead.
func Build(p Params) (*Plan, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.ChunkBytes == 0 {
		p.ChunkBytes = DefaultChunkBytes
	}
	if p.Algo == Tree && (p.Kind == AllGather || p.Kind == ReduceScatter) {
		p.Algo = Ring
	}
	part := ChannelPart(p.Count, p.ElemSize, p.Channels, p.Channel)
	b := &builder{p: p, stride: p.Count, plan: &Plan{Kind: p.Kind, Algo: p.Algo, NRanks: p.NRanks, Rank: p.Rank}}
	b.p.Count = part.Len
	switch p.Algo {
	case Ring:
		b.ring()
	case Tree:
		b.tree()
	case Direct:
		b.direct()
	}
	b.plan.shift(part.Off * p.ElemSize)
	return b.plan, nil
}

// builder accumulates the steps of one plan. Its p.Count is the channel's
// part; stride is the whole count, the elements between ranks' blocks of
// AllGather's receive and ReduceScatter's send buffer.
type builder struct {
	p      Params
	stride int
	plan   *Plan
}

// emit appends a step; empty steps are dropped (peers drop them too, since
// every length is a function of data shared by all ranks).
func (b *builder) emit(s Step) {
	if s.Len == 0 {
		return
	}
	if !s.Op.Receives() {
		s.From = -1
	}
	if !s.Op.Sends() {
		s.To = -1
	}
	b.plan.Steps = append(b.plan.Steps, s)
}

// useScratch records that the plan needs at least n scratch bytes.
func (b *builder) useScratch(n int) {
	b.plan.ScratchBytes = max(b.plan.ScratchBytes, n)
}

func ref(buf Buffer, off int) Ref { return Ref{buf, off} }

// pieces cuts a block of count elements into pipeline pieces.
func (b *builder) pieces(count int) []Span {
	return Split(count, NumPieces(count, b.p.ElemSize, b.p.ChunkBytes), alignElems(b.p.ElemSize))
}

// copyLocal emits the local copy of n bytes (the engine skips it when the
// two addresses coincide, which is the in-place case).
func (b *builder) copyLocal(src, dst Ref, n int) {
	b.emit(Step{Op: Copy, Src: src, Dst: dst, Len: n})
}
