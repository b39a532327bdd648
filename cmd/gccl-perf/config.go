package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/clock"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/report"
	"github.com/gccl/gccl/internal/perf"
)

// config is one invocation's settings, from the command line.
type config struct {
	ops       []perf.Op
	minBytes  int64
	maxBytes  int64
	factor    float64
	step      int64
	dtype     gccl.DataType
	redop     gccl.RedOp
	root      int
	iters     int
	warmup    int
	inplace   bool
	graph     bool
	launches  int  // -graph: timed launches of the captured graph
	batch     int  // CUDA eager: operations between one pair of events (0: automatic)
	register  bool // allocate with bufreg.MemAlloc and register with gccl (and the baseline)
	check     bool
	checkMax  int64  // check sizes up to this many bytes (0: every size)
	baseline  string // "none", "mpi" or "nccl"
	np        int    // > 0: that many goroutine ranks in one process; 0: one rank per MPI process
	device    int    // -np: every rank on this GPU (ranks share it); < 0: rank r on GPU r
	mem       bool   // GPU: the memory-traffic columns (internal/memview)
	csv       string
	png       string
	json      string
	progress  bool
	seed      uint64
	timeout   time.Duration // 0: GCCL_TIMEOUT
	cpuprof   string        // CPU profile file (under mpirun: one per rank, FILE.RANK)
	profRange bool          // GPU: each library's timed iterations in a CUDA profiler range
	halo      []int         // -op halo: the grid's dimensions (nil: two, balanced over the ranks)
	haloOpen  bool          // -op halo: no dimension wraps around (default: every one does)
}

// typeAliases are nccl-tests' names for the data types, accepted beside gccl's.
var typeAliases = map[string]gccl.DataType{
	"char": gccl.Int8, "int": gccl.Int32, "half": gccl.Float16, "float": gccl.Float32,
	"double": gccl.Float64, "bf16": gccl.BFloat16, "fp8_e4m3": gccl.Float8E4M3, "fp8_e5m2": gccl.Float8E5M2,
}

// parseFlags reads the command line (without the program name). Usage and
// errors go to stderr; the error says what was wrong.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("gccl-perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mpirun -np N gccl-perf [flags]   or   gccl-perf -np N [flags]")
		fs.PrintDefaults()
	}
	var c config
	op := fs.String("op", "allreduce", "operation: "+opNames()+" or all")
	b := fs.String("b", "1K", "smallest size in bytes (K, M, G suffixes)")
	e := fs.String("e", "64M", "largest size in bytes")
	fs.Float64Var(&c.factor, "f", 2, "multiply the size by this factor at each step")
	step := fs.String("i", "0", "add this many bytes at each step instead of multiplying by -f")
	t := fs.String("t", "float32", "data type (gccl's names, or nccl-tests': float, half, double, int, char, bf16)")
	o := fs.String("o", "sum", "reduction operator: sum, prod, max, min, avg")
	fs.IntVar(&c.root, "r", 0, "root rank of broadcast and reduce")
	fs.IntVar(&c.iters, "n", 20, "timed iterations per size")
	fs.IntVar(&c.warmup, "w", 5, "warm-up iterations per size")
	fs.BoolVar(&c.inplace, "inplace", false, "run in place (recvbuff overlaps sendbuff as NCCL defines it)")
	fs.BoolVar(&c.graph, "graph", false, "capture -n operations into a CUDA graph and time its launches (GPU only)")
	fs.IntVar(&c.launches, "launches", 5, "-graph: timed launches of the graph (the time is the median launch / -n)")
	fs.IntVar(&c.batch, "batch", 0, "GPU: operations timed back to back between two events (0: ceil(1M/size), at most 32)")
	fs.BoolVar(&c.register, "register", false, "allocate buffers with bufreg.MemAlloc and register them with gccl and the baseline")
	fs.BoolVar(&c.check, "check", true, "check every result element against a reference (random inputs, poisoned outputs)")
	checkMax := fs.String("checkmax", "0", "check only sizes up to this many bytes (0: every size); larger rows show N/A")
	fs.StringVar(&c.baseline, "baseline", "none", "library to compare with in the same run: none, mpi or nccl")
	fs.IntVar(&c.np, "np", 0, "run N ranks as goroutines in this process instead of one rank per MPI process")
	fs.IntVar(&c.device, "device", -1, "run every rank on this GPU: with -np in one process, sharing one context; under mpirun every process (default: rank r, or the local rank, on GPU r)")
	fs.BoolVar(&c.mem, "mem", true, "GPU: show the bytes gccl's kernels read and write per second (memGB/s) against a device copy of the same size timed in the run (%copy)")
	fs.StringVar(&c.csv, "csv", "", "also write the results as CSV to this file")
	fs.StringVar(&c.png, "png", "", "also plot bus bandwidth and time against size into this PNG file")
	fs.StringVar(&c.json, "json", "", "also write the results as JSON to this file")
	fs.BoolVar(&c.progress, "progress", false, "show progress on stderr")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the random inputs")
	fs.DurationVar(&c.timeout, "timeout", 0, "deadline of every wait (0: GCCL_TIMEOUT, default 5m)")
	fs.StringVar(&c.cpuprof, "cpuprofile", "", "write a CPU profile (go tool pprof) to this file; under mpirun FILE.RANK")
	fs.BoolVar(&c.profRange, "profilerange", false, "GPU: bracket each library's warm-up and timed iterations at each size, on every rank, in a CUDA profiler range (cuProfilerStart/Stop) for `ncu --replay-mode app-range` or `nsys --capture-range=cudaProfilerApi`")
	halo := fs.String("halo", "", "-op halo: the grid of ranks, 1 to 3 dimensions as NxM or NxMxK (default: 2-D, balanced over the ranks)")
	periodic := fs.Bool("haloperiodic", true, "-op halo: every dimension of the grid wraps around (false: none does, edge faces are skipped)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q; every setting is a flag (see -h)", fs.Arg(0))
	}
	var err error
	if c.ops, err = parseOps(*op); err != nil {
		return c, err
	}
	if c.minBytes, err = perf.ParseSize(*b); err != nil {
		return c, fmt.Errorf("-b: %w", err)
	}
	if c.maxBytes, err = perf.ParseSize(*e); err != nil {
		return c, fmt.Errorf("-e: %w", err)
	}
	if c.step, err = perf.ParseSize(*step); err != nil {
		return c, fmt.Errorf("-i: %w", err)
	}
	if c.checkMax, err = perf.ParseSize(*checkMax); err != nil {
		return c, fmt.Errorf("-checkmax: %w", err)
	}
	if c.dtype, err = parseType(*t); err != nil {
		return c, fmt.Errorf("-t: %w", err)
	}
	if c.redop, err = gccl.ParseRedOp(strings.ToLower(*o)); err != nil {
		return c, fmt.Errorf("-o: %w", err)
	}
	if c.halo, err = parseDims(*halo); err != nil {
		return c, fmt.Errorf("-halo: %w", err)
	}
	c.haloOpen = !*periodic
	return c, c.validate()
}

// validate checks what can be checked before any rank exists.
func (c *config) validate() error {
	switch {
	case c.maxBytes < c.minBytes:
		return fmt.Errorf("-e %d is below -b %d; the largest size must be at least the smallest", c.maxBytes, c.minBytes)
	case c.step == 0 && c.factor <= 1:
		return fmt.Errorf("-f %v must be above 1 (or set a step with -i)", c.factor)
	case c.iters < 1:
		return fmt.Errorf("-n %d: need at least one timed iteration", c.iters)
	case c.launches < 1:
		return fmt.Errorf("-launches %d: need at least one timed graph launch", c.launches)
	case c.batch < 0:
		return fmt.Errorf("-batch %d is negative (0 chooses the batch from the size)", c.batch)
	case c.warmup < 0:
		return fmt.Errorf("-w %d is negative", c.warmup)
	case c.root < 0:
		return fmt.Errorf("-r %d is negative; the root is a rank", c.root)
	case c.np < 0:
		return fmt.Errorf("-np %d is negative", c.np)
	case c.timeout < 0:
		return fmt.Errorf("-timeout %v is negative", c.timeout)
	case c.device < -1:
		return fmt.Errorf("-device %d: want a GPU ordinal, or -1 for rank r (or the local rank) on GPU r", c.device)
	}
	switch c.baseline {
	case "none", "mpi", "nccl":
	default:
		return fmt.Errorf("-baseline %q: want none, mpi or nccl", c.baseline)
	}
	if c.baseline == "mpi" && c.np > 0 {
		return fmt.Errorf("-baseline mpi needs one rank per MPI process: launch with mpirun and drop -np")
	}
	return nil
}

// clock is how the run's clock times.
func (c *config) clock() clock.Settings {
	return clock.Settings{Warmup: c.warmup, Iters: c.iters, Graph: c.graph, Launches: c.launches, Batch: c.batch, Timeout: c.timeout}
}

// uncheckedAbove is the size above which -checkmax left sizes unchecked,
// 0 when it did not.
func (c *config) uncheckedAbove() int64 {
	if !c.check {
		return 0
	}
	return c.checkMax
}

// files are the -csv, -png and -json outputs.
func (c *config) files() report.Files {
	return report.Files{CSV: c.csv, PNG: c.png, JSON: c.json, Ops: len(c.ops), Type: c.dtype}
}

// checks reports whether a size is checked (-check and -checkmax).
func (c *config) checks(size int64) bool {
	return c.check && (c.checkMax == 0 || size <= c.checkMax)
}

// sizes is the byte sizes of the sweep of op over nranks, each a whole
// number of elements and, where the operation splits its buffer into one
// block per rank, a whole number of blocks.
func (c *config) sizes(op perf.Op, nranks int) ([]int64, error) {
	align := int64(c.dtype.Size())
	if op.Blocked() {
		align *= int64(nranks)
	}
	factor := c.factor
	if c.step > 0 {
		factor = 0
	}
	return perf.Sizes(c.minBytes, c.maxBytes, factor, c.step, align)
}

func parseOps(s string) ([]perf.Op, error) {
	if s == "all" {
		return perf.Ops(), nil
	}
	for _, op := range perf.Ops() {
		if string(op) == strings.ToLower(s) {
			return []perf.Op{op}, nil
		}
	}
	return nil, fmt.Errorf("-op %q: want one of %s or all", s, opNames())
}

func opNames() string {
	var names []string
	for _, op := range perf.Ops() {
		names = append(names, string(op))
	}
	return strings.Join(names, ", ")
}

func parseType(s string) (gccl.DataType, error) {
	s = strings.ToLower(s)
	if t, ok := typeAliases[s]; ok {
		return t, nil
	}
	return gccl.ParseDataType(s)
}
