package gpu

import (
	"encoding/binary"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/kernels"
)

// descKey is collective o's descriptor as the kernels compare it across
// the ranks at their first barrier (kernels.DevComm.Key): its kind, count,
// data type, reduction operator (CreatePreMulSum operators count as one:
// their handles and factors may differ between ranks) and root, and the
// plan ch (kernel, grid, area), so that ranks that launched different
// operations fail with gccl.ErrInvalidUsage before touching a peer's
// memory instead of pairing them. It holds no operation number: a captured
// operation replays with the number it was captured with, so numbers
// would refuse valid programs that capture on some ranks while others run
// eagerly. Never zero.
func descKey(o *engine.Op, ch gpuplan.Choice) uint32 {
	var b [32]byte
	b[0], b[1], b[2], b[3] = byte(o.Kind), byte(o.Type), byte(ch.Kernel), byte(ch.Area)
	if o.Kind.Reduces() {
		b[4] = byte(min(o.Op, gccl.NumBuiltinOps))
	}
	if o.Kind.Rooted() {
		binary.LittleEndian.PutUint32(b[8:], uint32(o.Root))
	}
	binary.LittleEndian.PutUint32(b[12:], uint32(ch.Grid))
	binary.LittleEndian.PutUint64(b[16:], uint64(o.Count))
	binary.LittleEndian.PutUint64(b[24:], uint64(ch.AreaBytes))
	return fnv1a(b[:]) | 1
}

// fnv1a is the 32-bit FNV-1a hash of b (hash/fnv's, without its
// allocation on the launch path).
func fnv1a(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// checkDescriptor launches, before a kernel that compares no keys of its
// own (the one-shot and push kernels), a one-block kernel that does: the
// all-gather kernel with no bytes, whose first barrier compares c.Key and
// whose second keeps the key slots until every rank has read them. Only
// with GCCL_GPU_CHECK_DESCRIPTORS=1 (one kernel launch more per such
// operation); the setting is compared across the ranks at setup.
func (g *Backend) checkDescriptor(ch gpuplan.Choice, c *kernels.DevComm, s cuda.Stream) error {
	if !g.checkDesc || ch.Kernel.ComparesKeys() {
		return nil
	}
	return g.launch(kernels.AllGather, 1, s, c, func(a *cuda.Args) { a.U64(0) })
}
