package gpuplan

import (
	"errors"
	"fmt"

	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/transport/topo"
)

// Kernel is how the GPU backend runs one operation: a kernel family of
// package kernels, a copy, nothing, or the host.
type Kernel uint8

// The GPU paths.
const (
	// KernelNone: nothing to do (no elements, or a one-rank collective in
	// place).
	KernelNone Kernel = iota
	// KernelCopy: a device-to-device copy on the stream (a one-rank
	// collective, a send to self).
	KernelCopy
	// KernelSMCopy: the copy kernel (kernels.Copy), an eager one-rank
	// collective below SingleCopyMin: this rank's input to its output,
	// the grid striding over 16-byte vectors, no peer and no area.
	KernelSMCopy
	// KernelOneShot: algorithm Direct over protocol LL. Every rank stores
	// its data into every peer's direct area as flag-in-data lines and
	// combines what the peers stored into its own; no barrier.
	KernelOneShot
	// KernelPush: algorithm Direct over protocol Simple, all-reduce only.
	// Every rank stores its input into every peer's direct area, one
	// barrier, every rank reduces all copies.
	KernelPush
	// KernelPipelined: algorithm Pipelined. User buffers go through the
	// ranks' bulk areas segment by segment, one kernel per operation.
	KernelPipelined
	// KernelZeroCopy: algorithm ZeroCopy on registered buffers, which the
	// peers load and store directly (the all-reduce is two-shot).
	KernelZeroCopy
	// KernelP2P: the point-to-point kernel, every peer pair on its own
	// channels through the sender's bulk area.
	KernelP2P
	// KernelViaHost: the operation runs on the host backend's schedules,
	// staged through pinned host memory (peers cannot map each other).
	KernelViaHost
	numKernels
)

var kernelNames = [numKernels]string{"none", "copy", "smcopy", "oneshot", "push", "pipelined", "zerocopy", "p2p", "viahost"}

func (k Kernel) String() string {
	if k < numKernels {
		return kernelNames[k]
	}
	return fmt.Sprintf("Kernel(%d)", int(k))
}

// Algorithm is the algorithm the kernel implements, Auto for the paths
// that are none (nothing, a copy, the point-to-point kernel, the host,
// whose schedule Choose picks).
func (k Kernel) Algorithm() algo.Algorithm {
	switch k {
	case KernelOneShot, KernelPush:
		return algo.Direct
	case KernelPipelined:
		return algo.Pipelined
	case KernelZeroCopy:
		return algo.ZeroCopy
	}
	return algo.Auto
}

// Protocol is the kernel's protocol: LL for the one-shots, else Simple.
func (k Kernel) Protocol() algo.Protocol {
	if k == KernelOneShot {
		return algo.LL
	}
	return algo.Simple
}

// ComparesKeys reports whether kernel k's first barrier compares the
// ranks' launch keys (the operation's descriptor and registrations), as
// the pipelined and zero-copy kernels do. The one-shot and push kernels
// start without a barrier, so the GPU backend checks before them only
// when asked (GCCL_GPU_CHECK_DESCRIPTORS).
func (k Kernel) ComparesKeys() bool { return k == KernelPipelined || k == KernelZeroCopy }

// families[kernel][kind] is the kernel family of package kernels that
// runs kind that way: a reduction kernel (kernels.ReductionName adds type
// and operator) or a data-type independent entry point.
var families = [numKernels][algo.NumKinds]string{
	KernelNone: {"none", "none", "none", "none", "none", "none", "none"},
	KernelCopy: {"copy", "copy", "copy", "copy", "copy", "copy", "copy"},
	KernelSMCopy: {algo.AllReduce: "gccl_copy", algo.Broadcast: "gccl_copy", algo.Reduce: "gccl_copy",
		algo.AllGather: "gccl_copy", algo.ReduceScatter: "gccl_copy"},
	KernelOneShot: {algo.AllReduce: "allreduce_oneshot", algo.Broadcast: "gccl_broadcast_oneshot", algo.Reduce: "reduce_oneshot",
		algo.AllGather: "gccl_allgather_oneshot", algo.ReduceScatter: "reducescatter_oneshot"},
	KernelPush: {algo.AllReduce: "allreduce_push"},
	KernelPipelined: {algo.AllReduce: "allreduce_pipelined", algo.Broadcast: "gccl_broadcast_staged", algo.Reduce: "reduce_staged",
		algo.AllGather: "gccl_allgather_staged", algo.ReduceScatter: "reducescatter_staged"},
	KernelZeroCopy: {algo.AllReduce: "allreduce_twoshot", algo.Broadcast: "gccl_broadcast", algo.AllGather: "gccl_allgather",
		algo.ReduceScatter: "reducescatter"},
	KernelP2P: {algo.P2PSend: "gccl_p2p", algo.P2PRecv: "gccl_p2p"},
}

// Family is the kernel family (package kernels' name: AllReduceOneShot,
// AllGatherStaged, ...) that runs kind on path k, the engine's PathNone
// and PathCopy for those paths, and "" where k has no form for kind (and
// for KernelViaHost, which launches no kernel of its own).
func (k Kernel) Family(kind algo.Kind) string {
	if k < numKernels && kind.Valid() {
		return families[k][kind]
	}
	return ""
}

// Area is the memory a GPU kernel's Comm.Scratch points at.
type Area uint8

// The areas.
const (
	NoArea     Area = iota
	DirectArea      // the direct (LL) area of every rank's communication buffer
	BulkArea        // the bulk area of every rank's communication buffer
	UserArea        // the registered user buffers themselves (no scratch)
	HostArea        // pinned host memory of the via-host path
	numAreas
)

var areaNames = [numAreas]string{"-", "direct", "bulk", "user", "host"}

func (a Area) String() string {
	if a < numAreas {
		return areaNames[a]
	}
	return fmt.Sprintf("Area(%d)", int(a))
}

// RegLookup is the registration lookup that Choose's answer depends on
// (Input.Registered is its outcome); the engine does it before asking.
type RegLookup uint8

// The lookups.
const (
	// NoLookup: registration does not matter for this operation.
	NoLookup RegLookup = iota
	// EagerLookup: are the buffers the peers address in collective
	// registrations (Register) with mapped peers? (engine regs.View.Find)
	EagerLookup
	// GraphLookup: can the ranks agree on, or make, registrations held for
	// the graph's lifetime? (engine regs.View.Agree)
	GraphLookup
	numRegLookups
)

var regLookupNames = [numRegLookups]string{"none", "eager", "graph"}

func (l RegLookup) String() string {
	if l < numRegLookups {
		return regLookupNames[l]
	}
	return fmt.Sprintf("RegLookup(%d)", int(l))
}

// Input is what the GPU backend knows about one operation when it
// chooses how to run it. Everything but Rank, InPlace, Registered and
// Capturing is the same on every rank, and the choice is made so that
// ranks cannot disagree (see Choose).
type Input struct {
	Kind algo.Kind
	// Count is in elements as the API takes it: per rank for AllGather,
	// per block for ReduceScatter, the whole buffer otherwise.
	Count, ElemSize int
	NRanks, Rank    int
	Root            int // Broadcast and Reduce
	Peer            int // P2PSend and P2PRecv
	// Link is the link to Peer as both ranks of the pair agreed on it
	// at setup (P2PSend and P2PRecv; P2PChannels reads it).
	Link      topo.LinkKind
	InPlace   bool // the send buffer is the receive buffer
	PreMulSum bool // the operator is a PreMulSum (scales each input)
	// PeersMapped: the ranks map each other's memory (func PeersMapped);
	// otherwise the operation goes via the host.
	PeersMapped bool
	// Capturing: the stream is being captured into a CUDA graph. Only
	// read where CaptureMatters says so. For a zero-copy candidate (more
	// than one rank) it means captured with graph registration on, as the
	// engine asks (regs.View.Capturing): a capture without it looks up
	// the eager registrations, as eager operations do.
	Capturing bool
	// CommRegistered: the communicator has collective registrations, so
	// every collective takes a kernel that checks the registration key.
	CommRegistered bool
	// Registered: the lookup RegLookup asked for found the buffers.
	Registered bool
	Set        Settings
}

// Bytes is Count × ElemSize: what one rank contributes.
func (in *Input) Bytes() int { return in.Count * in.ElemSize }

// Choice is how one operation runs on the GPU: which path, with how
// many blocks, with which area as the kernel's scratch and its size
// (Comm.ScratchBytes).
type Choice struct {
	Kernel    Kernel
	Grid      int
	Area      Area
	AreaBytes int
}

func (c Choice) String() string {
	return fmt.Sprintf("%s grid=%d area=%s/%d", c.Kernel, c.Grid, c.Area, c.AreaBytes)
}

// ErrViaHostCapture is Choose's error for a captured operation that
// would go via the host: a graph replay could not wake the host side.
var ErrViaHostCapture = errors.New("operations that go via the host (GCCL_P2P_DISABLE, peers on other hosts, more than 8 ranks) cannot be captured in a CUDA graph")
