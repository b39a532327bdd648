package gpuplan

import (
	"fmt"
	"math"

	"github.com/gccl/gccl/internal/algo"
)

// Choose decides how the GPU backend runs one operation; the backend
// (internal/engine/gpu, collective.go) acts on its answer for collectives.
// Its point-to-point and via-host answers are what the engine derives from
// the same functions (Settings.P2PChannels for a launch's pairs,
// PeersMapped when it picks the backend). The steps, in order:
//
//  1. Peers that cannot map each other: via the host; refused while
//     capturing (ErrViaHostCapture).
//  2. Nothing to move: none. Point-to-point: a copy to self, else the
//     point-to-point kernel.
//  3. One rank, a built-in operator: nothing in place, else a copy when
//     capturing (a copy node) or from SingleCopyMin bytes; smaller eager
//     copies run the copy kernel (KernelSMCopy, CopyGrid blocks), whose
//     launch costs the host less than a copy's and which moves the bytes
//     faster while the L2 holds them. GCCL_ALGO and GCCL_PROTO do not
//     apply: a copy has no algorithm.
//  4. Direct over LL (the one-shot) when GCCL_ALGO allows direct,
//     GCCL_PROTO allows LL, the size is within GCCL_GPU_LL_MAX (any size
//     when GCCL_PROTO leaves out Simple) and the copies fit the direct
//     area. This depends on sizes and settings only, never on
//     registration, so no two ranks can disagree on it.
//  5. ZeroCopy on registered buffers (not for PreMulSum, whose kernels
//     would read the peers' unscaled inputs) when GCCL_ALGO allows it and
//     the lookup RegLookup asks for found them. Ranks that disagree fail
//     in the kernels' first barrier (the registration key).
//  6. All-reduce only: Direct over Simple (push) up to GCCL_GPU_PUSH_MAX
//     where it fits the direct area, unless the communicator has
//     registrations (the push kernel checks no key) or LL is forced.
//  7. Pipelined, the GPU's general path, whatever the list allows: it
//     runs every operation the allowed algorithms cannot.
//
// The error is for inputs the engine validates before (out of range) and
// for ErrViaHostCapture.
func Choose(in Input) (Choice, error) {
	if err := in.validate(); err != nil {
		return Choice{}, err
	}
	s, bytes := in.Set, in.Bytes()
	switch {
	case !in.PeersMapped && in.Capturing: // the via-host backend refuses it
		return Choice{}, ErrViaHostCapture
	case !in.PeersMapped: // the via-host backend
		return Choice{Kernel: KernelViaHost, Area: HostArea}, nil
	case in.Count == 0: // point-to-point: the kernel skips empty pieces
		return Choice{Kernel: KernelNone}, nil
	case in.Kind.IsP2P() && in.Peer == in.Rank: // a copy engine transfer
		return Choice{Kernel: KernelCopy}, nil
	case in.Kind.IsP2P(): // this op as its pair's only piece
		return Choice{Kernel: KernelP2P, Grid: s.P2PChannels(in.NRanks, bytes, in.Link), Area: BulkArea, AreaBytes: s.BulkBytes}, nil
	}
	if c, done := in.single(); done {
		return c, nil
	}
	if in.oneShot() {
		return Choice{Kernel: KernelOneShot, Grid: s.LLGrid(bytes), Area: DirectArea, AreaBytes: DirectBytes}, nil
	}
	if in.RegLookup() != NoLookup && in.Registered {
		return Choice{Kernel: KernelZeroCopy, Grid: s.Channels(bytes), Area: UserArea}, nil
	}
	if in.push() {
		return Choice{Kernel: KernelPush, Grid: s.Channels(bytes), Area: DirectArea, AreaBytes: DirectBytes}, nil
	}
	return Choice{Kernel: KernelPipelined, Grid: s.Channels(bytes), Area: BulkArea, AreaBytes: s.BulkBytes}, nil
}

// single is step 3: done when in is a one-rank collective that is a copy
// (or nothing).
func (in *Input) single() (Choice, bool) {
	switch {
	case in.NRanks != 1 || in.PreMulSum:
		return Choice{}, false
	case in.InPlace:
		return Choice{Kernel: KernelNone}, true
	case in.Capturing || in.Bytes() >= SingleCopyMin:
		return Choice{Kernel: KernelCopy}, true
	}
	return Choice{Kernel: KernelSMCopy, Grid: CopyGrid(in.Bytes())}, true
}

// oneShot is step 4.
func (in *Input) oneShot() bool {
	s, bytes := in.Set, in.Bytes()
	return s.Algos.Has(algo.Direct) && s.Protos.Has(algo.LL) && (s.Protos.LLForced() || bytes <= s.LLMax) &&
		LLScratchBytes(bytes, in.NRanks) <= DirectBytes
}

// push is step 6.
func (in *Input) push() bool {
	s, bytes := in.Set, in.Bytes()
	return in.Kind == algo.AllReduce && s.Algos.Has(algo.Direct) && !in.CommRegistered && !s.Protos.LLForced() &&
		bytes <= s.PushMax && PushScratchBytes(bytes, in.NRanks) <= DirectBytes
}

// zeroCopyForm reports whether kind has a zero-copy kernel.
func zeroCopyForm(k algo.Kind) bool {
	return k == algo.AllReduce || k == algo.AllGather || k == algo.Broadcast || k == algo.ReduceScatter
}

// RegLookup is the registration lookup whose outcome (Registered) step 5
// of Choose reads, NoLookup where it reads none: while capturing, past the push limit, the graph registration
// agreement (the one-shot and push kernels beat zero-copy up to there and
// need no registration); else, when the communicator has registrations,
// the eager lookup.
func (in *Input) RegLookup() RegLookup {
	if !in.PeersMapped || in.Count == 0 || !zeroCopyForm(in.Kind) || in.PreMulSum || !in.Set.Algos.Has(algo.ZeroCopy) {
		return NoLookup
	}
	if _, done := in.single(); done || in.oneShot() {
		return NoLookup
	}
	switch {
	case in.Bytes() > in.Set.PushMax && in.Capturing:
		return GraphLookup
	case in.CommRegistered:
		return EagerLookup
	}
	return NoLookup
}

// CaptureMatters reports whether Choose or RegLookup read Capturing for
// in, so the engine need not ask the driver otherwise: via the host (which
// refuses captures), one-rank copies below SingleCopyMin (a copy node when
// captured, else the copy kernel), and
// zero-copy candidates past the push limit.
func (in *Input) CaptureMatters() bool {
	if !in.PeersMapped {
		return true
	}
	if in.Count == 0 || in.Kind.IsP2P() {
		return false
	}
	if in.NRanks == 1 && !in.PreMulSum && !in.InPlace && in.Bytes() < SingleCopyMin {
		return true
	}
	return zeroCopyForm(in.Kind) && !in.PreMulSum && in.Set.Algos.Has(algo.ZeroCopy) && !in.oneShot() &&
		in.Bytes() > in.Set.PushMax
}

// perRank is how many times Count × ElemSize a rank's larger buffer holds.
func (in *Input) perRank() int {
	if in.Kind == algo.AllGather || in.Kind == algo.ReduceScatter {
		return max(1, in.NRanks)
	}
	return 1
}

func (in *Input) validate() error {
	s := in.Set
	switch {
	case !in.Kind.Valid():
		return fmt.Errorf("unknown operation %d", int(in.Kind))
	case in.NRanks < 1 || in.PeersMapped && in.NRanks > MaxRanks:
		return fmt.Errorf("nranks %d out of range [1,%d] for kernels", in.NRanks, MaxRanks)
	case in.Rank < 0 || in.Rank >= in.NRanks:
		return fmt.Errorf("rank %d out of range [0,%d)", in.Rank, in.NRanks)
	case in.Kind.Rooted() && (in.Root < 0 || in.Root >= in.NRanks):
		return fmt.Errorf("root %d out of range [0,%d)", in.Root, in.NRanks)
	case in.Kind.IsP2P() && (in.Peer < 0 || in.Peer >= in.NRanks):
		return fmt.Errorf("peer %d out of range [0,%d)", in.Peer, in.NRanks)
	case in.PreMulSum && !in.Kind.Reduces():
		return fmt.Errorf("%v does not reduce; it has no PreMulSum", in.Kind)
	case in.Count < 0 || in.ElemSize < 1 || in.Count > math.MaxInt/in.ElemSize/in.perRank():
		return fmt.Errorf("count %d of %d-byte elements out of range", in.Count, in.ElemSize)
	case s.MaxChannels < 1 || s.MaxChannels > GridMax:
		return fmt.Errorf("grid cap %d out of range [1,%d]", s.MaxChannels, GridMax)
	case s.GridCap < s.MaxChannels || s.GridCap > GridMax:
		return fmt.Errorf("kernel grid cap %d out of range [%d,%d]", s.GridCap, s.MaxChannels, GridMax)
	case s.BulkBytes < 1 || s.LLMax < 0 || s.PushMax < 0:
		return fmt.Errorf("bulk area %d, LL limit %d, push limit %d: not positive", s.BulkBytes, s.LLMax, s.PushMax)
	}
	return nil
}
