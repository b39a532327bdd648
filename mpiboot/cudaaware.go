package mpiboot

// CUDA-aware MPI: whether MPI may be handed GPU memory (package internal/mpi asks MPI).

import (
	"fmt"

	"github.com/gccl/gccl/internal/mpi"
)

// CUDASupport says whether MPI accepts GPU (CUDA) memory in its calls.
type CUDASupport int

// The answers of CUDAAware.
const (
	CUDAUnknown CUDASupport = iota // this MPI has no way to tell
	CUDANo                         // host memory only: copy GPU data to the host for MPI
	CUDAYes                        // device pointers may be passed to MPI
)

func (s CUDASupport) String() string {
	switch s {
	case CUDAUnknown:
		return "unknown"
	case CUDANo:
		return "no"
	case CUDAYes:
		return "yes"
	}
	return fmt.Sprintf("CUDASupport(%d)", int(s))
}

// CUDAAware reports whether the MPI library running this job is CUDA-aware:
// Open MPI's MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support, else
// CUDAUnknown. Treat CUDAUnknown as CUDANo.
//
// gccl beside CUDA-aware MPI. The NCCL guide (§4.2.2) warns that gccl and
// CUDA-aware MPI both create inter-device dependencies: a gccl operation,
// once launched, waits on the GPU until every rank has launched its own,
// and a CUDA-aware MPI transfer may do the same. Using both to move data
// between the same GPUs concurrently is therefore not guaranteed to be
// safe: it can deadlock. gccl does not serialise the two for you; order
// them: wait for the gccl stream (Synchronize or Wait) before handing one of
// its buffers to MPI, and complete the MPI requests before the next gccl
// operation on those buffers. gccl keeps its own side safe: its bootstrap
// runs on its own duplicate communicators, and while it waits it probes
// MPI so that the other ranks' MPI transfers complete (see package doc,
// Progress). examples/mpi/cudaaware shows the ordering.
func CUDAAware() (CUDASupport, error) {
	v, err := mpi.CUDAAware()
	switch {
	case err != nil:
		return CUDAUnknown, err
	case v == 1:
		return CUDAYes, nil
	case v == 0:
		return CUDANo, nil
	}
	return CUDAUnknown, nil
}
