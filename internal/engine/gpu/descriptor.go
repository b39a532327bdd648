package gpu

import (
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/kernels"
)

// descKey is collective o's descriptor as the kernels compare it across
// the ranks at their first barrier (kernels.DevComm.Key): engine.Op.Key
// with the plan ch (kernel, grid, area), so that ranks that launched
// different operations fail with gccl.ErrInvalidUsage before touching a
// peer's memory instead of pairing them.
func descKey(o *engine.Op, ch gpuplan.Choice) uint32 {
	return o.Key([4]uint64{uint64(ch.Kernel), uint64(ch.Area), uint64(ch.Grid), uint64(ch.AreaBytes)})
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
