package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/arena"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/check"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/clock"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/layout"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/memview"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/report"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/perf"
)

// ranker is one rank's side of a run: its device, its libraries and the
// exchanger through which the ranks agree on each measurement. Every rank
// runs the same sweep; only rank 0 (out != io.Discard) prints.
type ranker struct {
	cfg    config
	rank   int
	nranks int
	dev    device.Device
	reg    arena.GcclRegister // registers with gccl's communicator, for -register
	gccl   lib.Library
	base   lib.Baseline  // nil without one
	clk    clock.Clock   // times every library alike
	mem    *memview.View // GPU: the memory-traffic view; nil elsewhere
	x      exchange.Exchanger
	prof   *profRange       // -profilerange, else nil
	out    io.Writer        // the table (rank 0), else io.Discard
	prog   *report.Progress // rank 0 with -progress, else nil
	check  check.Checker
}

// sweep measures op at every size of the configuration.
func (r *ranker) sweep(op perf.Op) (res report.Result, err error) {
	res = report.NewResult(op)
	if op.Rooted() && r.cfg.root >= r.nranks {
		return res, fmt.Errorf("-r %d is not a rank of this %d-rank run", r.cfg.root, r.nranks)
	}
	sizes, err := r.cfg.sizes(op, r.nranks)
	if err != nil {
		return res, err
	}
	spec, err := r.spec(op)
	if err != nil {
		return res, err
	}
	if _, err := spec.New(0); err != nil {
		fmt.Fprintf(r.out, "# %s skipped: %v\n\n", op, err)
		return res, nil
	}
	libs := []lib.Library{r.gccl}
	if r.base != nil {
		if err := r.base.Supports(op, r.cfg.dtype, r.cfg.redop, r.cfg.inplace); err != nil {
			fmt.Fprintf(r.out, "# %v\n", err)
		} else {
			libs, res.Baseline = append(libs, r.base), r.base.Name()
		}
	}
	mem, err := r.alloc(spec, sizes, res.Baseline != "")
	if err != nil {
		return res, err
	}
	defer func() {
		if ferr := mem.Free(); ferr != nil && err == nil {
			err = fmt.Errorf("%s: releasing the buffers: %w", op, ferr)
		}
	}()
	tab := perf.Table{W: r.out, Baseline: res.Baseline, Memory: r.mem != nil}
	tab.Header(r.title(spec, mem))
	for i, size := range sizes {
		row, err := r.measureSize(spec, size, mem.Base, libs, i, len(sizes))
		if err != nil {
			return res, fmt.Errorf("%s at %d bytes: %w", op, size, err)
		}
		tab.Row(row)
		res.Add(row)
	}
	r.prog.Clear()
	report.WriteOpSummary(r.out, res, r.cfg.uncheckedAbove())
	return res, nil
}

// measureSize measures every library at one size and returns the row.
func (r *ranker) measureSize(spec layout.Spec, size int64, mem uintptr, libs []lib.Library, i, n int) (perf.Row, error) {
	op, t := spec.Op, r.cfg.dtype
	c, l, err := r.callAt(spec, size, mem)
	if err != nil {
		return perf.Row{}, err
	}
	bytes := l.SizeBytes(t, r.nranks)
	row := perf.Row{Size: bytes, Count: int(bytes) / t.Size(), Type: t.String(), RedOp: "-", Root: -1}
	if op.Reducing() {
		row.RedOp = r.cfg.redop.String()
	}
	if op.Rooted() {
		row.Root = r.cfg.root
	}
	in := check.Inputs{Seed: r.cfg.seed + uint64(size), Type: t}
	for k, library := range libs {
		r.prog.Show(op, bytes, i, n, library.Name())
		m, err := r.measure(library, l, c, mem, in)
		if err != nil {
			return row, fmt.Errorf("%s: %w", library.Name(), err)
		}
		if k == 0 {
			row.Gccl = m
		} else {
			row.Base = &m
		}
	}
	if r.mem != nil {
		if row.Mem, err = r.mem.Row(r.x, c, bytes, row.Gccl.Time, r.cfg.inplace); err != nil {
			return row, fmt.Errorf("memory view: %w", err)
		}
	}
	return row, nil
}

// callAt is the call of spec's operation at size bytes on the sweep memory
// at mem, and its layout.
func (r *ranker) callAt(spec layout.Spec, size int64, mem uintptr) (lib.Call, layout.Layout, error) {
	t := r.cfg.dtype
	l, err := spec.New(size)
	if err != nil {
		return lib.Call{}, l, err
	}
	send, recv := l.Place(mem, t)
	return lib.Call{Op: spec.Op, Send: send, Recv: recv, Count: l.Count, Type: t, RedOp: r.cfg.redop,
		Root: r.cfg.root, Rank: r.rank, NRanks: r.nranks, Grid: spec.Grid}, l, nil
}

// spec is what op's layouts on this rank depend on besides the size; for
// halo, the grid (-halo) must hold this run's ranks.
func (r *ranker) spec(op perf.Op) (layout.Spec, error) {
	s := layout.Spec{Op: op, Type: r.cfg.dtype, Rank: r.rank, NRanks: r.nranks, InPlace: r.cfg.inplace}
	if op != perf.Halo {
		return s, nil
	}
	var err error
	s.Grid, err = r.cfg.grid(r.nranks)
	return s, err
}

// measure runs lib once checked (when -check), then the warm-up and timed
// iterations, and agrees with the other ranks on the outcome.
func (r *ranker) measure(library lib.Library, l layout.Layout, c lib.Call, mem uintptr, in check.Inputs) (perf.Measure, error) {
	mine, localErr := r.runLocal(library, l, c, mem, in)
	if localErr != nil {
		mine.Failed = true
	}
	all, err := exchange.Agree(r.x, mine, r.clk.Samples())
	if localErr != nil {
		return perf.Measure{}, localErr
	}
	if err != nil {
		return perf.Measure{}, err
	}
	return perf.NewMeasure(c.Op, l.AlgBytes(c.Type, c.NRanks), c.NRanks, all.Times, all.Wrong), nil
}

// runLocal is this rank's part of measure. With -graph, out of place, the
// result of the timed graph launches is checked again (the inputs are
// unchanged, so each replay must rewrite the same result); the wrong count
// is the worse of the two checks.
func (r *ranker) runLocal(library lib.Library, l layout.Layout, c lib.Call, mem uintptr, in check.Inputs) (exchange.Report, error) {
	rep := exchange.Report{Wrong: -1}
	var st check.Staged
	checked := r.cfg.checks(l.SizeBytes(c.Type, c.NRanks))
	if checked {
		var err error
		if st, err = check.Stage(r.dev, mem, l, in, c); err != nil {
			return rep, err
		}
		if err := r.clk.Once(library, c); err != nil {
			return rep, err
		}
		if rep.Wrong, err = check.Verify(r.dev, c.Recv, st, c.Type, c.NRanks, r.check); err != nil {
			return rep, err
		}
		r.sayWrong(library, c, rep.Wrong, st)
	}
	err := r.prof.around(func() (err error) {
		rep.Times, err = r.clk.Times(library, c, l.SizeBytes(c.Type, c.NRanks))
		return err
	})
	if err != nil {
		return rep, err
	}
	if checked && r.cfg.graph && !r.cfg.inplace {
		again, err := check.Verify(r.dev, c.Recv, st, c.Type, c.NRanks, r.check)
		if err != nil {
			return rep, err
		}
		rep.Wrong = max(rep.Wrong, again)
	}
	return rep, nil
}

// sayWrong prints on stderr the first wrong element of c's result when
// wrong elements were counted (the table only counts them).
func (r *ranker) sayWrong(library lib.Library, c lib.Call, wrong int64, st check.Staged) {
	if wrong <= 0 {
		return
	}
	first, err := check.FirstWrong(r.dev, c.Recv, st, c.Type, c.NRanks)
	if err != nil || first == "" {
		return
	}
	fmt.Fprintf(os.Stderr, "gccl-perf: rank %d: %s %v %d elements: %d wrong, first %s\n", r.rank, library.Name(), c.Op, c.Count, wrong, first)
}

// alloc allocates the memory for the largest layout of spec's sweep,
// registered with gccl and with the baseline (when it runs this op and can
// register) under -register.
func (r *ranker) alloc(spec layout.Spec, sizes []int64, withBase bool) (*arena.Arena, error) {
	bytes, err := r.arenaBytes(spec, sizes)
	if err != nil {
		return nil, err
	}
	regs := map[string]arena.Registrar{}
	if reg, ok := r.base.(arena.Registrar); ok && withBase {
		regs[r.base.Name()] = reg
	}
	return arena.New(r.dev, bytes, r.cfg.register, r.reg, regs)
}

// arenaBytes is the memory the largest layout of spec at sizes needs.
func (r *ranker) arenaBytes(spec layout.Spec, sizes []int64) (int, error) {
	most := 0
	for _, s := range sizes {
		l, err := spec.New(s)
		if err != nil {
			return 0, err
		}
		most = max(most, l.MemElems)
	}
	return most * r.cfg.dtype.Size(), nil
}

func (r *ranker) title(spec layout.Spec, mem *arena.Arena) string {
	place := "out-of-place"
	if r.cfg.inplace {
		place = "in-place"
	}
	if spec.Op == perf.Halo {
		wrap := "periodic"
		if r.cfg.haloOpen {
			wrap = "open"
		}
		place = fmt.Sprintf("%s grid %s, face = size, %s", wrap, dimsString(spec.Grid.Dims), place)
	}
	regs := "buffers not registered"
	if len(mem.RegisteredWith) > 0 {
		regs = "buffers registered with " + strings.Join(mem.RegisteredWith, " and ")
	}
	return fmt.Sprintf("gccl-perf %s: %d ranks, device %v, %v %v, %s, iters %d, warmup %d, check %v, %s, %s",
		spec.Op, r.nranks, r.dev.Kind(), r.cfg.dtype, r.cfg.redop, place, r.cfg.iters, r.cfg.warmup, r.cfg.check,
		r.clk.Describe(), regs)
}
