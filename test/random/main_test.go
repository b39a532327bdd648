package random

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
)

// Defaults of a plain `go test` (race_test.go lowers them under -race).
var (
	defaultOps      = 500
	defaultSeeds    = 2
	defaultMaxCount = 1 << 20
)

var (
	firstSeed = flag.Uint64("random.seed", 0, "first seed; 0 = random (printed)")
	numSeeds  = flag.Int("random.seeds", 0, "seeds to run, from -random.seed on; 0 = 2")
	numOps    = flag.Int("random.ops", 0, "operations per seed; 0 = 500 (100 with -race)")
	shared    = flag.Int("random.shared", 0, "TestShared: this many ranks in this process; 0 = 2, 3 and 4 in turn")
	maxCount  = flag.Int("random.maxcount", 0, "largest count, in elements; 0 = 1<<20 (1<<14 with -race)")
	timeout   = flag.Duration("random.timeout", 2*time.Minute, "deadline of every gccl and MPI wait")
	backend   = flag.String("random.backend", "auto", "auto (a GPU where present, unless GCCL_DEVICE=host), host or cuda")
	oneDevice = flag.Int("gccl.device", -1, "put every rank on this GPU (>= 0: processes share one GPU); the shared form uses max(it, 0)")
	verbose   = flag.Bool("random.v", false, "log every batch before it runs")
	streams   = flag.Int("random.streams", 0, "at most this many streams per communicator (the same operations, fewer streams); 0 = as drawn (2 or 3)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("CUDA_MODULE_LOADING") == "" {
		// Lazily loading a kernel may wait for the context's running
		// kernels: with several ranks in one context, a rank's first
		// launch would wait for a peer's kernel that waits for this rank.
		_ = os.Setenv("CUDA_MODULE_LOADING", "EAGER")
	}
	os.Exit(harness.RunUnderMPI(m, *timeout))
}

// settings are a run's resolved flags.
type settings struct {
	seed             uint64
	seeds, ops, maxN int
	cfg              *comm.Config
}

func (s settings) replay(seed uint64, shared int) string {
	r := fmt.Sprintf("-random.seed %d -random.ops %d -random.maxcount %d -random.backend %s", seed, s.ops, s.maxN, *backend)
	if shared > 0 {
		r += fmt.Sprintf(" -random.shared %d", shared)
	}
	if *oneDevice >= 0 {
		r += fmt.Sprintf(" -gccl.device %d", *oneDevice)
	}
	return r
}

// resolve reads the flags; seed is the first seed when -random.seed is 0.
func resolve(t *testing.T, seed uint64, devices int) settings {
	t.Helper()
	s := settings{seed: *firstSeed, seeds: *numSeeds, ops: *numOps, maxN: *maxCount}
	if s.seed == 0 {
		s.seed = seed
	}
	if s.seeds <= 0 {
		s.seeds = defaultSeeds
	}
	if s.ops <= 0 {
		s.ops = defaultOps
	}
	if s.maxN <= 0 {
		s.maxN = defaultMaxCount
	}
	s.cfg = &comm.Config{Timeout: *timeout, Name: "random"}
	switch strings.ToLower(*backend) {
	case "auto":
	case "host":
		s.cfg.Backend = device.Host
	case "cuda":
		s.cfg.Backend = device.CUDA
		if *oneDevice >= 0 { // every rank on that GPU
			devices = *oneDevice + 1
		}
		cudatest.RequireGPU(t, devices)
	default:
		t.Fatalf("-random.backend %q: want auto, host or cuda", *backend)
	}
	if *oneDevice >= 0 {
		s.cfg.Device, s.cfg.DeviceSet = *oneDevice, true
	}
	return s
}

// seedOf is a seed that every process agrees on: rank 0's, over MPI.
func seedOf(t *testing.T, seed uint64) uint64 {
	t.Helper()
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(seed >> (8 * i))
	}
	if err := mpiboot.Bcast(b, 0); err != nil {
		t.Fatalf("broadcasting the seed: %v", err)
	}
	var v uint64
	for i := range b {
		v |= uint64(b[i]) << (8 * i)
	}
	return v | 1 // never 0, which means "random"
}
