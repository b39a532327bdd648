package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/arena"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/baseline"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/check"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/clock"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/memview"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/report"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/mpiboot"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // a failure: bad setup, an operation's error, a timeout
	exitUsage = 2 // bad flags
	exitWrong = 3 // gccl produced wrong results
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(exitOK)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gccl-perf:", err)
		os.Exit(exitUsage)
	}
	os.Exit(run(cfg, os.Stdout, os.Stderr, hooks{check: check.CountWrong}))
}

// hooks are what tests replace.
type hooks struct {
	check check.Checker
}

// run runs the configured sweeps and returns the exit status.
func run(cfg config, stdout, stderr io.Writer, h hooks) int {
	if cfg.timeout == 0 {
		cfg.timeout = env.Get().Timeout
	}
	if cfg.np > 0 {
		stop, err := profile(cfg.cpuprof)
		if err != nil {
			fmt.Fprintln(stderr, "gccl-perf:", err)
			return exitError
		}
		defer stop()
		return runLocal(cfg, stdout, stderr, h)
	}
	return runMPI(cfg, stdout, stderr, h)
}

// profile starts a CPU profile into name ("" for none) and returns its stop.
func profile(name string) (func(), error) {
	if name == "" {
		return func() {}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// runMPI runs one rank in this process of an MPI job (or an MPI singleton).
func runMPI(cfg config, stdout, stderr io.Writer, h hooks) int {
	if err := mpiboot.Init(); err != nil {
		fmt.Fprintln(stderr, "gccl-perf: starting MPI:", err)
		return exitError
	}
	defer mpiboot.Finalize()
	if err := mpiboot.SetTimeout(cfg.timeout); err != nil {
		fmt.Fprintln(stderr, "gccl-perf:", err)
		return exitError
	}
	rank, size := mpiboot.World()
	if cfg.cpuprof != "" {
		stop, err := profile(fmt.Sprintf("%s.%d", cfg.cpuprof, rank))
		if err != nil {
			fmt.Fprintln(stderr, "gccl-perf:", err)
			return exitError
		}
		defer stop()
	}
	gpu, meter, closeMeter, err := mpiDevice(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "gccl-perf: rank %d: %v\n", rank, err)
		_ = mpiboot.Abort(exitError)
		return exitError
	}
	defer closeMeter() // after the communicator's Close
	c, cost, err := newMPIComm(cfg, gpu, meter)
	if err != nil {
		fmt.Fprintf(stderr, "gccl-perf: rank %d: creating the communicator: %v\n", rank, err)
		_ = mpiboot.Abort(exitError)
		return exitError
	}
	defer c.Close()
	status := runRank(cfg, c, cost, rank, size, exchange.MPI{}, stdout, stderr, h)
	if status == exitError && size > 1 {
		_ = mpiboot.Abort(exitError) // no rank may be left waiting for this one
	}
	return status
}

// runLocal runs cfg.np goroutine ranks in this process.
func runLocal(cfg config, stdout, stderr io.Writer, h hooks) int {
	comms, costs, closeMeters, err := newLocalComms(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "gccl-perf: creating the communicators:", err)
		return exitError
	}
	defer closeMeters() // after the communicators' Close
	x := exchange.NewLocal(cfg.np, cfg.timeout)
	stderr = &lockedWriter{w: stderr} // every rank reports its own errors
	status := make([]int, cfg.np)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			defer c.Close()
			status[r] = runRank(cfg, c, costs[r], r, cfg.np, x.Rank(r), stdout, stderr, h)
		})
	}
	wg.Wait()
	return worst(status)
}

// runRank is one rank's whole run: stream, clock, libraries, their init
// costs (cost is gccl's, measured by the caller), every operation's sweep;
// rank 0 prints the init line, the tables, the summary and the files.
func runRank(cfg config, c *comm.Comm, cost initcost.Cost, rank, nranks int, x exchange.Exchanger, stdout, stderr io.Writer, h hooks) (status int) {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "gccl-perf: rank %d: %v\n", rank, err)
		return exitError
	}
	d := c.Device()
	s, err := d.NewStream()
	if err != nil {
		return fail(err)
	}
	defer d.DestroyStream(s)
	clk, err := clock.New(cfg.clock(), d, s)
	if err != nil {
		return fail(err)
	}
	defer clk.Close()
	env := lib.Env{Comm: c, Device: d, Stream: s}
	r := &ranker{cfg: cfg, rank: rank, nranks: nranks, dev: d, x: x, out: io.Discard, check: h.check, reg: arena.CommRegister(c),
		gccl: lib.NewGccl(env), clk: clk}
	if r.prof, err = newProfRange(cfg, d, x); err != nil {
		return fail(err)
	}
	var paths memview.PathSource
	if e, err := commlink.Engine(c); err == nil {
		paths = e
	}
	if r.mem, err = memView(cfg, paths, d, s, rank); err != nil {
		return fail(err)
	}
	defer r.mem.Close()
	if rank == 0 {
		r.out = stdout
		if cfg.progress {
			r.prog = report.NewProgress(stderr)
		}
	}
	if r.base, err = baseline.Open(cfg.baseline, env); err != nil {
		return fail(err)
	}
	if r.base != nil {
		defer func() { closeBaseline(r.base, status == exitError) }()
	}
	init, err := r.initCosts(cost)
	if err != nil {
		return fail(err)
	}
	report.WriteInit(r.out, init)
	results, status := r.sweepAll(stderr)
	if status == exitError || rank != 0 {
		return status
	}
	report.WriteRunSummary(r.out, results)
	if err := cfg.files().Write(results, init); err != nil {
		return fail(err)
	}
	return status
}

// sweepAll runs every operation's sweep; a failure stops the run.
func (r *ranker) sweepAll(stderr io.Writer) ([]report.Result, int) {
	var results []report.Result
	status := exitOK
	for _, op := range r.cfg.ops {
		res, err := r.sweep(op)
		if err != nil {
			fmt.Fprintf(stderr, "gccl-perf: rank %d: %v\n", r.rank, err)
			return results, exitError
		}
		if res.GcclWrong > 0 {
			status = exitWrong
		}
		results = append(results, res)
	}
	return results, status
}

// memView is the memory-traffic view of a GPU rank (-mem), or nil.
func memView(cfg config, paths memview.PathSource, d device.Device, s gccl.Stream, rank int) (*memview.View, error) {
	if !cfg.mem {
		return nil, nil
	}
	return memview.New(cfg.clock(), paths, d, s, rank)
}

// closeBaseline closes the baseline, or aborts it after a failure when it
// can, so that no rank waits for a peer that gave up.
func closeBaseline(b lib.Baseline, failed bool) {
	if a, ok := b.(lib.Aborter); ok && failed {
		_ = a.Abort()
		return
	}
	_ = b.Close()
}

// worst is the most severe of the ranks' statuses.
func worst(status []int) int {
	out := exitOK
	for _, s := range status {
		if s == exitError || out == exitOK {
			out = s
		}
	}
	return out
}

// lockedWriter serialises the writes of goroutine ranks.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
