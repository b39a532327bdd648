package main

import (
	"fmt"
	"io"
	"time"

	"github.com/gccl/gccl"
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
	gccl   library
	base   baseline // nil without one
	x      exchanger
	out    io.Writer // the table (rank 0), else io.Discard
	prog   io.Writer // progress (rank 0 with -progress), else nil
	check  checker
}

// opResult is the outcome of one operation's sweep.
type opResult struct {
	op        perf.Op
	rows      []perf.Row
	baseName  string // "" when the baseline did not run
	gcclWrong int64
	baseWrong int64
}

// sweep measures op at every size of the configuration.
func (r *ranker) sweep(op perf.Op) (opResult, error) {
	res := opResult{op: op}
	if rooted(op) && r.cfg.root >= r.nranks {
		return res, fmt.Errorf("-r %d is not a rank of this %d-rank run", r.cfg.root, r.nranks)
	}
	sizes, err := r.cfg.sizes(op, r.nranks)
	if err != nil {
		return res, err
	}
	if _, err := newLayout(op, 0, r.cfg.dtype, r.rank, r.nranks, r.cfg.inplace); err != nil {
		fmt.Fprintf(r.out, "# %s skipped: %v\n\n", op, err)
		return res, nil
	}
	libs := []library{r.gccl}
	if r.base != nil {
		if err := r.base.Supports(op, r.cfg.dtype, r.cfg.redop, r.cfg.inplace); err != nil {
			fmt.Fprintf(r.out, "# %v\n", err)
		} else {
			libs, res.baseName = append(libs, r.base), r.base.Name()
		}
	}
	mem, err := r.alloc(op, sizes)
	if err != nil {
		return res, err
	}
	defer r.dev.Free(mem)
	tab := perf.Table{W: r.out, Baseline: res.baseName}
	tab.Header(r.title(op))
	for i, size := range sizes {
		row, err := r.measureSize(op, size, mem, libs, i, len(sizes))
		if err != nil {
			return res, fmt.Errorf("%s at %d bytes: %w", op, size, err)
		}
		tab.Row(row)
		res.rows = append(res.rows, row)
		res.gcclWrong = addWrong(res.gcclWrong, row.Gccl.Wrong)
		if row.Base != nil {
			res.baseWrong = addWrong(res.baseWrong, row.Base.Wrong)
		}
	}
	r.clearProgress()
	r.summary(res)
	return res, nil
}

// alloc allocates memory for the largest layout of the sweep.
func (r *ranker) alloc(op perf.Op, sizes []int64) (uintptr, error) {
	most := 0
	for _, s := range sizes {
		l, err := newLayout(op, s, r.cfg.dtype, r.rank, r.nranks, r.cfg.inplace)
		if err != nil {
			return 0, err
		}
		most = max(most, l.memElems)
	}
	return r.dev.Alloc(most * r.cfg.dtype.Size())
}

// measureSize measures every library at one size and returns the row.
func (r *ranker) measureSize(op perf.Op, size int64, mem uintptr, libs []library, i, n int) (perf.Row, error) {
	t := r.cfg.dtype
	l, err := newLayout(op, size, t, r.rank, r.nranks, r.cfg.inplace)
	if err != nil {
		return perf.Row{}, err
	}
	send, recv := l.place(mem, t)
	c := call{Op: op, Send: send, Recv: recv, Count: l.count, Type: t, RedOp: r.cfg.redop,
		Root: r.cfg.root, Rank: r.rank, NRanks: r.nranks}
	bytes := l.sizeBytes(t, r.nranks)
	row := perf.Row{Size: bytes, Count: int(bytes) / t.Size(), Type: t.String(), RedOp: "-", Root: -1}
	if reducing(op) {
		row.RedOp = r.cfg.redop.String()
	}
	if rooted(op) {
		row.Root = r.cfg.root
	}
	in := inputs{seed: r.cfg.seed + uint64(size), t: t}
	for k, lib := range libs {
		r.showProgress(op, bytes, i, n, lib.Name())
		m, err := r.measure(lib, l, c, mem, in)
		if err != nil {
			return row, fmt.Errorf("%s: %w", lib.Name(), err)
		}
		if k == 0 {
			row.Gccl = m
		} else {
			row.Base = &m
		}
	}
	return row, nil
}

// measure runs lib once checked (when -check), then the warm-up and timed
// iterations, and agrees with the other ranks on the outcome.
func (r *ranker) measure(lib library, l layout, c call, mem uintptr, in inputs) (perf.Measure, error) {
	mine, localErr := r.runLocal(lib, l, c, mem, in)
	if localErr != nil {
		mine.failed = true
	}
	all, err := agree(r.x, mine, r.cfg.iters)
	if localErr != nil {
		return perf.Measure{}, localErr
	}
	if err != nil {
		return perf.Measure{}, err
	}
	return perf.NewMeasure(c.Op, l.sizeBytes(c.Type, c.NRanks), c.NRanks, all.times, all.wrong), nil
}

// runLocal is this rank's part of measure.
func (r *ranker) runLocal(lib library, l layout, c call, mem uintptr, in inputs) (report, error) {
	rep := report{wrong: -1}
	if r.cfg.check {
		st, err := stage(r.dev, mem, l, in, c)
		if err != nil {
			return rep, err
		}
		if _, err := lib.Run(c); err != nil {
			return rep, err
		}
		if rep.wrong, err = verify(r.dev, c.Recv, st, c.Type, c.NRanks, r.check); err != nil {
			return rep, err
		}
	}
	for range r.cfg.warmup {
		if _, err := lib.Run(c); err != nil {
			return rep, err
		}
	}
	rep.times = make([]time.Duration, 0, r.cfg.iters)
	for range r.cfg.iters {
		d, err := lib.Run(c)
		if err != nil {
			return rep, err
		}
		rep.times = append(rep.times, d)
	}
	return rep, nil
}

func (r *ranker) title(op perf.Op) string {
	place := "out-of-place"
	if r.cfg.inplace {
		place = "in-place"
	}
	return fmt.Sprintf("gccl-perf %s: %d ranks, device %v, %v %v, %s, iters %d, warmup %d, check %v",
		op, r.nranks, r.dev.Kind(), r.cfg.dtype, r.cfg.redop, place, r.cfg.iters, r.cfg.warmup, r.cfg.check)
}

func addWrong(total, w int64) int64 {
	if w < 0 || total < 0 {
		return -1
	}
	return total + w
}

// graphError says why -graph cannot run on this device.
func graphError(k device.Kind) error {
	if k == device.Host {
		return gccl.Errorf(gccl.InvalidUsage, "-graph", "CUDA graph launch is not supported on host (this run's device is %v); drop -graph", k)
	}
	return gccl.Errorf(gccl.InvalidUsage, "-graph", "gccl-perf cannot capture CUDA graphs yet on %v; drop -graph", k)
}
