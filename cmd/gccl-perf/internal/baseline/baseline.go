package baseline

import (
	"fmt"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
)

// baselines maps -baseline names to constructors; every rank calls the
// constructor at the same point (it may be collective). "mpi" is MPI's own
// collectives; "nccl" loads libnccl.so.2 (through internal/nccl) when it
// is opened, and fails then where there is none.
var baselines = map[string]func(lib.Env) (lib.Baseline, error){
	"mpi":  newMPIBaseline,
	"nccl": newNCCLBaseline,
}

// Open opens the baseline called name (-baseline) on every rank; "none"
// is no baseline (nil).
func Open(name string, env lib.Env) (lib.Baseline, error) {
	if name == "none" {
		return nil, nil
	}
	mk, ok := baselines[name]
	if !ok {
		return nil, fmt.Errorf("baseline %s is not available in this build (it needs the GPU build of gccl-perf, which loads libnccl.so.2)", name)
	}
	return mk(env)
}
