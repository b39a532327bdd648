package main

import (
	"fmt"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
)

// baselines maps -baseline names to constructors; every rank calls the
// constructor at the same point (it may be collective). "mpi" is MPI's own
// collectives; "nccl" is registered by the GPU build (dlopen of
// libnccl.so.2 through internal/nccl) and missing elsewhere.
var baselines = map[string]func(lib.Env) (lib.Baseline, error){
	"mpi": newMPIBaseline,
}

func openBaseline(name string, env lib.Env) (lib.Baseline, error) {
	if name == "none" {
		return nil, nil
	}
	mk, ok := baselines[name]
	if !ok {
		return nil, fmt.Errorf("baseline %s is not available in this build (it needs the GPU build of gccl-perf, which loads libnccl.so.2)", name)
	}
	return mk(env)
}
