package algo

// The GPU backend's communication buffer, one per rank, mapped by every
// peer: the flag array, the direct area of the one-shot (LL) kernels and
// the push all-reduce, and the bulk area that the pipelined kernels and the
// point-to-point kernel go through (GPUBulkBytes, or GCCL_GPU_BUFFSIZE
// within GPUBulkMin..GPUBulkMax). 80 MiB per rank in all by default, a
// quarter of NCCL's default buffers.
const (
	GPUFlagsBytes  = 64 << 10
	GPUDirectBytes = 16 << 20
	GPUBulkBytes   = 64 << 20
	GPUBulkMin     = 1 << 20
	GPUBulkMax     = 1 << 30

	// GPULLMax is the largest collective (bytes per rank, per block for
	// ReduceScatter) that takes a one-shot LL kernel by default
	// (GCCL_GPU_LL_MAX); GPUPushMax the largest all-reduce that takes the
	// push kernel (GCCL_GPU_PUSH_MAX). Larger ones take the pipelined
	// kernels. Either needs its copies to fit the direct area.
	GPULLMax   = 128 << 10
	GPUPushMax = 1 << 20
	// GPUChannelBytes is how many bytes one channel (block) should move
	// before another channel is worth starting.
	GPUChannelBytes = 32 << 10
	// GPUSingleCopyMin is the smallest eager one-rank collective that is a
	// device-to-device copy rather than a kernel (issue 18: the pipelined
	// kernel moved 336 GB/s at 16 MiB on an H100, NCCL's copy 1130).
	GPUSingleCopyMin = 1 << 20
	// GPUMaxChannels is the default grid cap; GCCL_MAX_NCHANNELS sets
	// another, up to GPUGridMax. Every kernel's blocks must be
	// co-resident (one block per SM at most is assumed).
	GPUMaxChannels = 32
)

// What the kernels are built for, as package kernels declares them
// (kernels.MaxRanks, MaxChannels, Threads; a test pins them).
const (
	GPUMaxRanks = 8   // peers a kernel can address
	GPUGridMax  = 64  // the most blocks in a grid
	GPUThreads  = 512 // threads per block
)

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

// GPUSettings are what every rank of a GPU communicator derives its
// kernels and grids from; ranks whose settings differ would launch kernels
// that never meet, so the engine checks at init that they agree.
type GPUSettings struct {
	MaxChannels int       // the grid cap, 1..GPUGridMax (GCCL_MAX_NCHANNELS)
	BulkBytes   int       // the bulk area (GCCL_GPU_BUFFSIZE)
	LLMax       int       // one-shot limit in bytes (GCCL_GPU_LL_MAX)
	PushMax     int       // push all-reduce limit in bytes (GCCL_GPU_PUSH_MAX)
	Algos       Allowed   // GCCL_ALGO
	Protos      Protocols // GCCL_PROTO
}

// NewGPUSettings resolves the environment's values, 0 meaning the
// default: the grid cap within 1..GPUGridMax, the bulk area within GPUBulkMin..GPUBulkMax
// rounded down to 64 KiB.
func NewGPUSettings(maxNChannels, bulkBytes, llMax, pushMax int, algos Allowed, protos Protocols) GPUSettings {
	s := GPUSettings{MaxChannels: GPUMaxChannels, BulkBytes: GPUBulkBytes, LLMax: GPULLMax, PushMax: GPUPushMax,
		Algos: algos, Protos: protos}
	if maxNChannels > 0 {
		s.MaxChannels = min(maxNChannels, GPUGridMax)
	}
	if bulkBytes > 0 {
		s.BulkBytes = min(max(bulkBytes, GPUBulkMin), GPUBulkMax) &^ (64<<10 - 1)
	}
	if llMax > 0 {
		s.LLMax = llMax
	}
	if pushMax > 0 {
		s.PushMax = pushMax
	}
	return s
}

// DefaultGPUSettings are the settings with no environment variable set.
func DefaultGPUSettings() GPUSettings {
	return NewGPUSettings(0, 0, 0, 0, AllAlgorithms, AllProtocols)
}

// BufBytes is the size of a rank's communication buffer: flags, direct
// area and bulk area.
func (s GPUSettings) BufBytes() int { return GPUFlagsBytes + GPUDirectBytes + s.BulkBytes }

// Channels is the grid of a kernel moving bytes: one block per
// GPUChannelBytes, at least one, at most the grid cap.
func (s GPUSettings) Channels(bytes int) int {
	return min(max(1, (bytes+GPUChannelBytes-1)/GPUChannelBytes), s.MaxChannels)
}

// LLGrid is the grid of a one-shot kernel: a thread per 8 bytes, within
// the grid cap.
func (s GPUSettings) LLGrid(bytes int) int {
	return min(max(1, ((bytes+7)/8+GPUThreads-1)/GPUThreads), s.MaxChannels)
}

// P2PChannels is one peer pair's channel count in the point-to-point
// kernel for nbytes (the larger direction): one per GPUChannelBytes, at
// most 2*MaxChannels/(nranks-1) (and GPUGridMax in all), so a rank talking
// to every peer stays within twice the collectives' grid cap. A
// point-to-point channel is bound by its SM (on 4xH200, 10 channels a pair
// moved 185 GB/s at 1 GiB, ~18.5 GB/s each), so pairs get more than a
// collective's share. Both ranks of the pair compute the same.
func (s GPUSettings) P2PChannels(nranks, nbytes int) int {
	limit := max(1, min(2*s.MaxChannels, GPUGridMax)/max(1, nranks-1))
	return min(max(1, (nbytes+GPUChannelBytes-1)/GPUChannelBytes), limit)
}

// P2PRegionBytes is the part of each rank's bulk area that carries what it
// sends to one peer.
func (s GPUSettings) P2PRegionBytes(nranks int) int {
	return s.BulkBytes / max(1, nranks-1) / 16 * 16
}

// GPUPeersMapped reports whether the ranks of a GPU communicator can map
// each other's memory, so that kernels run the operations; otherwise every
// operation goes via the host (package engine/choose picks the via-host
// backend): point-to-point is not disabled (GCCL_P2P_DISABLE), every
// rank is on this host, and the kernels address that many ranks.
func GPUPeersMapped(nranks int, p2pDisable, allOnThisHost bool) bool {
	return !p2pDisable && allOnThisHost && nranks <= GPUMaxRanks
}
