package main

import (
	"errors"
	"fmt"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/arena"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/layout"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
)

// initCosts measures, on a GPU, the first operations of gccl and of a
// baseline that measured its own init (NCCL), then agrees with the other
// ranks on every library's init cost. gcclCost is this rank's gccl init.
func (r *ranker) initCosts(gcclCost initcost.Cost) (initcost.Summary, error) {
	libs, costs := []lib.Library{r.gccl}, []initcost.Cost{gcclCost}
	base, baseName := initcost.Cost{Took: -1}, ""
	if ic, ok := r.base.(initcost.Measured); ok {
		libs, costs = append(libs, r.base), append(costs, ic.InitCost())
		baseName = r.base.Name()
	}
	localErr := r.measureFirstOps(libs, costs)
	if len(costs) > 1 {
		base = costs[1]
	}
	sum, err := initcost.Agree(r.x, costs[0], base, baseName, localErr != nil)
	if localErr != nil {
		return sum, fmt.Errorf("measuring the first operations: %w", localErr)
	}
	return sum, err
}

// firstOp is what the first-op measurement runs: the layouts of the run's
// first operation that can run with this configuration (a layout exists,
// the root is a rank, the baseline supports it), at the smallest and the
// largest size of its sweep; ok is false when no operation can.
func (r *ranker) firstOp() (spec layout.Spec, sizes []int64, ok bool) {
	for _, op := range r.cfg.ops {
		if op.Rooted() && r.cfg.root >= r.nranks {
			continue
		}
		spec, err := r.spec(op)
		if err != nil {
			continue
		}
		if _, err := spec.New(0); err != nil {
			continue
		}
		if r.base != nil && r.base.Supports(op, r.cfg.dtype, r.cfg.redop, r.cfg.inplace) != nil {
			continue
		}
		all, err := r.cfg.sizes(op, r.nranks)
		if err != nil || len(all) == 0 {
			continue
		}
		if len(all) == 1 {
			return spec, all, true
		}
		return spec, []int64{all[0], all[len(all)-1]}, true
	}
	return layout.Spec{}, nil, false
}

// measureFirstOps runs, on a GPU, each library's first operations
// (firstOp, unchecked, as the clock runs them) on memory allocated before
// any is measured, and sets costs[i].MemFirst of libs[i]. On the host, or
// when no operation can run, the costs are left as they are.
func (r *ranker) measureFirstOps(libs []lib.Library, costs []initcost.Cost) (err error) {
	m := initcost.MeterOf(r.dev)
	spec, sizes, ok := r.firstOp()
	if m == nil || !ok || costs[0].MemInit < 0 { // gccl's init unmeasured: a shared GPU
		return nil
	}
	bytes, err := r.arenaBytes(spec, sizes)
	if err != nil {
		return err
	}
	mem, err := arena.New(r.dev, bytes, false, nil, nil)
	if err != nil {
		return fmt.Errorf("first operations: %w", err)
	}
	defer func() { err = errors.Join(err, mem.Free()) }()
	for i, library := range libs {
		costs[i], err = initcost.AddFirstOps(m, costs[i], func() error {
			for _, size := range sizes {
				c, _, err := r.callAt(spec, size, mem.Base)
				if err != nil {
					return err
				}
				if err := r.clk.Once(library, c); err != nil {
					return fmt.Errorf("%s: first %s at %d bytes: %w", library.Name(), spec.Op, size, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
