package kernels

import (
	"slices"

	"github.com/gccl/gccl"
)

// Limits and layout constants shared with common.cuh and sync.cuh.
const (
	MaxRanks    = 8   // GCCL_MAX_RANKS: peers a kernel can address
	MaxChannels = 64  // GCCL_MAX_CHANNELS: the most blocks in a grid of co-resident blocks
	CopyGridMax = 512 // the most blocks in a grid of the copy kernel (Copy), whose blocks never wait for each other
	Threads     = 512 // GCCL_THREADS: block size every kernel is built for

	// FlagsWords is the size in uint32 of each rank's flag array (zeroed,
	// mapped by every peer): collective flags, point-to-point flags, then
	// the registration key slots the first barrier of a collective kernel
	// compares (one per source rank and channel).
	FlagsWords = 3 * MaxRanks * MaxChannels
	// CounterWords is the size in uint32 of each rank's counter array
	// (zeroed, local to the rank).
	CounterWords = (MaxRanks + 2) * MaxChannels
)

// Status values written to DevComm.Status: by a kernel, except
// StatusNetwork.
const (
	StatusOK      = 0
	StatusTimeout = 1 // a wait passed DevComm.TimeoutNs: a peer is gone or stuck
	StatusAborted = 2 // the host set *DevComm.AbortFlag
	StatusBadArgs = 3 // the scratch buffer is too small for the launch
	// StatusBadUsage: the ranks launched with different DevComm.Key values
	// (another operation, plan or buffer registration).
	StatusBadUsage = 4
	// StatusNetwork: a network transfer of a FIFO connection failed (the
	// peer died, garbage on the wire, no progress within the deadline).
	// Written by the host proxy (internal/engine/proxy), never by a
	// kernel; the kernels' waits poll the word and stop (docs/gpunet.md).
	StatusNetwork = 5
)

// The reduction kernels; each has one entry point per data type and operator.
const (
	AllReduceOneShot   = "allreduce_oneshot"
	AllReduceTwoShot   = "allreduce_twoshot"
	AllReducePipelined = "allreduce_pipelined"
	// AllReducePush: every rank stores its input into every peer's direct
	// area, one barrier, every rank reduces all copies (medium sizes).
	AllReducePush = "allreduce_push"
	ReduceScatter = "reducescatter"
	Reduce        = "reduce"
	// The staged forms: user buffers not mapped by the peers go through
	// the scratch buffers, in one kernel per operation (staged.cuh).
	ReduceScatterStaged = "reducescatter_staged"
	ReduceStaged        = "reduce_staged"
	// The one-shot (LL) forms for small sizes: every rank stores its data
	// into the peers' direct areas as flag-in-data lines, no barrier.
	ReduceScatterOneShot = "reducescatter_oneshot"
	ReduceOneShot        = "reduce_oneshot"
)

// The data-type independent kernels' entry points.
const (
	AllGather = "gccl_allgather" // (DevComm, nbytes uint64)
	Broadcast = "gccl_broadcast" // (DevComm, nbytes uint64)
	// Staged forms, through the scratch buffers.
	AllGatherStaged = "gccl_allgather_staged" // (DevComm, nbytes uint64 per rank)
	BroadcastStaged = "gccl_broadcast_staged" // (DevComm, nbytes uint64)
	// One-shot (LL) forms, through the direct areas.
	AllGatherOneShot = "gccl_allgather_oneshot" // (DevComm, nbytes uint64 per rank)
	BroadcastOneShot = "gccl_broadcast_oneshot" // (DevComm, nbytes uint64)
	P2PCopy          = "gccl_p2p_copy"          // (DevComm, nbytes uint64, recv int32)
	Barrier          = "gccl_barrier"           // (DevComm)
	FillU32          = "gccl_fill_u32"          // (p uintptr, n uint64, seed uint32): test kernel
	// Copy: a one-rank collective's copy of nbytes from In[Rank] to
	// Out[Rank] on the SMs; its grid (up to CopyGridMax blocks) strides
	// over 16-byte vectors and needs no co-residency.
	Copy = "gccl_copy" // (DevComm, nbytes uint64)
	P2P  = "gccl_p2p"  // (DevComm, gcclP2PDesc by value): a launch's sends and receives (p2p.cu)
)

var typeSuffix = map[gccl.DataType]string{
	gccl.Int8: "i8", gccl.Uint8: "u8", gccl.Int32: "i32", gccl.Uint32: "u32",
	gccl.Int64: "i64", gccl.Uint64: "u64", gccl.Float16: "f16", gccl.Float32: "f32",
	gccl.Float64: "f64", gccl.BFloat16: "bf16", gccl.Float8E4M3: "e4m3", gccl.Float8E5M2: "e5m2",
}

var opSuffix = map[gccl.RedOp]string{
	gccl.Sum: "sum", gccl.Prod: "prod", gccl.Max: "max", gccl.Min: "min", gccl.Avg: "avg",
}

// ReductionName is the entry point of a reduction kernel for t and op:
// ReductionName(AllReduceOneShot, gccl.Float32, gccl.Sum) is
// "gccl_allreduce_oneshot_f32_sum". Operators from gccl.NumBuiltinOps on
// (premultiplied sums) map to the premulsum kernels, whose scalarBits and
// scalarPtr arguments carry this rank's factor. Every launch asks, so valid names come from a table
// built once (no allocation); anything else takes the checking path.
func ReductionName(kernel string, t gccl.DataType, op gccl.RedOp) (string, error) {
	if k, slot := reductionIndex(kernel), opSlot(op); k >= 0 && slot >= 0 && t >= 0 && int(t) < len(reductionNames[k]) {
		if name := reductionNames[k][t][slot]; name != "" {
			return name, nil
		}
	}
	return reductionName(kernel, t, op)
}

// EntryPoints lists every entry point of the fatbin that gccl launches:
// each reduction kernel for every data type and operator (premultiplied
// sums as the premulsum entry), then the data-type independent kernels.
func EntryPoints() []string {
	var names []string
	for k := range mainReductionKernels {
		for _, t := range gccl.DataTypes() {
			for op := range gccl.NumBuiltinOps + 1 {
				names = append(names, reductionNames[k][t][op])
			}
		}
	}
	return append(names, AllGather, Broadcast, AllGatherStaged, BroadcastStaged, AllGatherOneShot, BroadcastOneShot,
		P2PCopy, Barrier, FillU32, P2P, Copy)
}

// RingEntryPoints lists every entry point of Ring's fatbin, as EntryPoints
// does for Main's.
func RingEntryPoints() []string {
	var names []string
	for k := range ringReductionKernels {
		for _, t := range gccl.DataTypes() {
			for op := range gccl.NumBuiltinOps + 1 {
				names = append(names, reductionNames[len(mainReductionKernels)+k][t][op])
			}
		}
	}
	return append(names, RingAllGather, RingBroadcast, NetP2P)
}

// mainReductionKernels are Main's kernels with one entry point per type
// and operator, ringReductionKernels Ring's; reductionKernels both.
var mainReductionKernels = [...]string{AllReduceOneShot, AllReduceTwoShot, AllReducePipelined, ReduceScatter, Reduce, ReduceScatterStaged, ReduceStaged, AllReducePush,
	ReduceScatterOneShot, ReduceOneShot}

var ringReductionKernels = [...]string{RingAllReduce, RingReduceScatter, RingReduce, RingAllReduceGather}

var reductionKernels = func() (all [len(mainReductionKernels) + len(ringReductionKernels)]string) {
	copy(all[:], mainReductionKernels[:])
	copy(all[len(mainReductionKernels):], ringReductionKernels[:])
	return all
}()

// reductionNames[kernel][type][opSlot(op)] is reductionName's result, or ""
// where that is an error.
var reductionNames = func() (tab [len(reductionKernels)][][gccl.NumBuiltinOps + 1]string) {
	types := gccl.DataTypes()
	for k, kernel := range reductionKernels {
		tab[k] = make([][gccl.NumBuiltinOps + 1]string, slices.Max(types)+1)
		for _, t := range types {
			for op := range gccl.NumBuiltinOps + 1 {
				tab[k][t][op], _ = reductionName(kernel, t, op)
			}
		}
	}
	return tab
}()

// reductionIndex is kernel's index in reductionKernels, or -1.
func reductionIndex(kernel string) int {
	for i, k := range reductionKernels {
		if k == kernel {
			return i
		}
	}
	return -1
}

// opSlot is op's column in reductionNames: the built-ins, then every
// premultiplied sum in one; -1 for negative operators.
func opSlot(op gccl.RedOp) int {
	if op < 0 {
		return -1
	}
	return int(min(op, gccl.NumBuiltinOps))
}

// reductionName builds ReductionName's result or its error.
func reductionName(kernel string, t gccl.DataType, op gccl.RedOp) (string, error) {
	if reductionIndex(kernel) < 0 {
		return "", gccl.Errorf(gccl.InvalidArgument, "kernel", "%q is not a reduction kernel", kernel)
	}
	ts, ok := typeSuffix[t]
	if !ok {
		return "", gccl.Errorf(gccl.InvalidArgument, "datatype", "no kernels for data type %v", t)
	}
	osfx := "premulsum"
	if op < gccl.NumBuiltinOps {
		if osfx, ok = opSuffix[op]; !ok {
			return "", gccl.Errorf(gccl.InvalidArgument, "op", "no kernels for operator %v", op)
		}
	}
	return "gccl_" + kernel + "_" + ts + "_" + osfx, nil
}

// OneShotScratchBytes is the LL scratch each rank needs for a one-shot
// collective of nbytes per rank (per block for reduce-scatter) over
// nranks: two halves (alternate launches) of
// nranks slots, each holding 16 bytes per 8 bytes of data. A larger scratch
// serves every smaller size.
func OneShotScratchBytes(nbytes, nranks int) int {
	return 2 * nranks * ((nbytes + 7) / 8) * 16
}

// PushScratchBytes is the direct area each rank needs for a push
// all-reduce of nbytes over nranks: two halves (alternate launches) of
// nranks slots of nbytes rounded up to 16.
func PushScratchBytes(nbytes, nranks int) int {
	return 2 * nranks * ((nbytes + 15) / 16 * 16)
}
