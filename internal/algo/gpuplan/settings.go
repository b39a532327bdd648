package gpuplan

import (
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/transport/topo"
)

// The GPU backend's communication buffer, one per rank, mapped by every
// peer: the flag array, the direct area of the one-shot (LL) kernels and
// the push all-reduce, and the bulk area that the pipelined kernels and the
// point-to-point kernel go through (BulkBytes, or GCCL_GPU_BUFFSIZE
// within BulkMin..BulkMax). 80 MiB per rank in all by default, a
// quarter of NCCL's default buffers.
const (
	FlagsBytes  = 64 << 10
	DirectBytes = 16 << 20
	BulkBytes   = 64 << 20
	BulkMin     = 1 << 20
	BulkMax     = 1 << 30

	// LLMax is the largest collective (bytes per rank, per block for
	// ReduceScatter) that takes a one-shot LL kernel by default
	// (GCCL_GPU_LL_MAX); PushMax the largest all-reduce that takes the
	// push kernel (GCCL_GPU_PUSH_MAX). Larger ones take the pipelined
	// kernels. Either needs its copies to fit the direct area.
	LLMax   = 128 << 10
	PushMax = 1 << 20
	// ChannelBytes is how many bytes one channel (block) should move
	// before another channel is worth starting.
	ChannelBytes = 32 << 10
	// SingleCopyMin is the smallest eager one-rank collective that is a
	// device-to-device copy rather than the copy kernel. On an H100 (32
	// copies back to back, docs/perf-notes.md, seventeenth session) the
	// kernel took 3.2/3.3/3.3 µs at 1/2/4 MiB against the copy engine's
	// 4.1/3.7/3.7, and 4.7-4.8 against 4.6 µs at 8 MiB; in gccl-perf the
	// kernel was slower at 16 MiB too (9.3-9.5 against 8.5-8.8 µs).
	SingleCopyMin = 8 << 20
	// MaxChannels is the default grid cap; GCCL_MAX_NCHANNELS sets
	// another, up to GridMax. Every kernel's blocks but the copy
	// kernel's must be co-resident (one block per SM at most is assumed).
	MaxChannels = 32
)

// What the kernels are built for, as package kernels declares them
// (kernels.MaxRanks, MaxChannels, Threads; a test pins them).
const (
	MaxRanks = 8   // peers a kernel can address
	GridMax  = 64  // the most blocks in a grid
	Threads  = 512 // threads per block
	// CopyGridMax is the most blocks in the copy kernel's grid, which
	// strides over the bytes with no barrier.
	CopyGridMax = 512
)

// CopyGrid is the copy kernel's grid for nbytes: a block per 8 KiB (one
// 16-byte vector per thread), at most CopyGridMax blocks, which need not
// be co-resident (the kernel has no barrier).
func CopyGrid(nbytes int) int {
	return min(max(1, (nbytes+16*Threads-1)/(16*Threads)), CopyGridMax)
}

// LLScratchBytes is the direct area a one-shot (LL) collective of nbytes
// per rank needs on each rank (kernels.OneShotScratchBytes): two halves
// (alternate launches) of nranks slots, 16 bytes per 8 bytes of data.
func LLScratchBytes(nbytes, nranks int) int {
	return 2 * nranks * ((nbytes + 7) / 8) * 16
}

// PushScratchBytes is the direct area a push all-reduce of nbytes needs on
// each rank (kernels.PushScratchBytes): two halves of nranks slots of
// nbytes rounded up to 16.
func PushScratchBytes(nbytes, nranks int) int {
	return 2 * nranks * ((nbytes + 15) / 16 * 16)
}

// Settings are what every rank of a GPU communicator derives its
// kernels and grids from; ranks whose settings differ would launch kernels
// that never meet, so the engine checks at init that they agree.
type Settings struct {
	MaxChannels int            // the collectives' grid cap, 1..GridMax (GCCL_MAX_NCHANNELS)
	GridCap     int            // the most blocks of any kernel, 1..GridMax: GridMax, less where ranks share a GPU in one process
	BulkBytes   int            // the bulk area (GCCL_GPU_BUFFSIZE)
	LLMax       int            // one-shot limit in bytes (GCCL_GPU_LL_MAX)
	PushMax     int            // push all-reduce limit in bytes (GCCL_GPU_PUSH_MAX)
	Algos       algo.Allowed   // GCCL_ALGO
	Protos      algo.Protocols // GCCL_PROTO
}

// NewSettings resolves the environment's values, 0 meaning the
// default: the grid cap within 1..GridMax, the bulk area within BulkMin..BulkMax
// rounded down to 64 KiB.
func NewSettings(maxNChannels, bulkBytes, llMax, pushMax int, algos algo.Allowed, protos algo.Protocols) Settings {
	s := Settings{MaxChannels: MaxChannels, GridCap: GridMax, BulkBytes: BulkBytes, LLMax: LLMax, PushMax: PushMax,
		Algos: algos, Protos: protos}
	if maxNChannels > 0 {
		s.MaxChannels = min(maxNChannels, GridMax)
	}
	if bulkBytes > 0 {
		s.BulkBytes = min(max(bulkBytes, BulkMin), BulkMax) &^ (64<<10 - 1)
	}
	if llMax > 0 {
		s.LLMax = llMax
	}
	if pushMax > 0 {
		s.PushMax = pushMax
	}
	return s
}

// DefaultSettings are the settings with no environment variable set.
func DefaultSettings() Settings {
	return NewSettings(0, 0, 0, 0, algo.AllAlgorithms, algo.AllProtocols)
}

// BufBytes is the size of a rank's communication buffer: flags, direct
// area and bulk area.
func (s Settings) BufBytes() int { return FlagsBytes + DirectBytes + s.BulkBytes }

// Channels is the grid of a kernel moving bytes: one block per
// ChannelBytes, at least one, at most the grid cap.
func (s Settings) Channels(bytes int) int {
	return min(max(1, (bytes+ChannelBytes-1)/ChannelBytes), s.MaxChannels)
}

// LLGrid is the grid of a one-shot kernel: a thread per 8 bytes, within
// the grid cap.
func (s Settings) LLGrid(bytes int) int {
	return min(max(1, ((bytes+7)/8+Threads-1)/Threads), s.MaxChannels)
}

// P2PChannels is one peer pair's channel count in the point-to-point
// kernel for nbytes (the larger direction) over link: one per
// ChannelBytes, at most 2*MaxChannels/(nranks-1) (and GridCap in all), so
// a rank talking to every peer stays within twice the collectives' grid
// cap. A point-to-point channel is bound by its SM (on 4xH200 over
// NVLink, 10 channels a pair moved 185 GB/s at 1 GiB, ~18.5 GB/s each),
// so pairs get more than a collective's share. Over PCIe (link
// topo.LinkPCIe) the bus, not the SMs, is the bound: a pair takes at
// most P2PChannelsPCIe. Every other link (NVLink, one GPU, none or
// unknown) takes the rule above unchanged. Both ranks of the pair compute
// the same (the engine gives both the link they agreed on).
func (s Settings) P2PChannels(nranks, nbytes int, link topo.LinkKind) int {
	limit := max(1, min(2*s.MaxChannels, s.GridCap)/max(1, nranks-1))
	if link == topo.LinkPCIe {
		limit = min(limit, P2PChannelsPCIe)
	}
	return min(max(1, (nbytes+ChannelBytes-1)/ChannelBytes), limit)
}

// P2PChannelsPCIe is the most channels a point-to-point pair over PCIe
// takes: a PCIe 5.0 x16 link carries about 64 GB/s a direction (PCIe 4.0
// half that), which 4 channels at the ~18.5 GB/s one moves over NVLink
// already exceed; more would only hold SMs that the application's
// kernels could use while they wait on the bus. A figure derived from
// those bandwidths, not measured on a PCIe machine.
const P2PChannelsPCIe = 4

// P2PRegionBytes is the part of each rank's bulk area that carries what it
// sends to one peer.
func (s Settings) P2PRegionBytes(nranks int) int {
	return s.BulkBytes / max(1, nranks-1) / 16 * 16
}

// PeersMapped reports whether the ranks of a GPU communicator can map
// each other's memory, so that kernels run the operations; otherwise every
// operation goes via the host (package engine/choose picks the via-host
// backend): point-to-point is not disabled (GCCL_P2P_DISABLE), every
// rank is on this host, and the kernels address that many ranks.
func PeersMapped(nranks int, p2pDisable, allOnThisHost bool) bool {
	return !p2pDisable && allOnThisHost && nranks <= MaxRanks
}
