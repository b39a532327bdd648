//go:build cgo

package mpiboot

// CUDA-aware MPI: whether MPI may be handed GPU memory. Open MPI answers
// through its "cuda" extension (mpi-ext.h, MPIX_Query_cuda_support), MPICH
// 4 through MPIX_GPU_query_support; both are asked at run time, since the
// library found at run time (the GPU machine's) may differ from the one
// built against.

/*
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

// gccl_cuda_aware returns 1 (CUDA-aware), 0 (not) or -1 (MPI cannot tell).
static int gccl_cuda_aware(void) {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA && defined(MPIX_CUDA_AWARE_SUPPORT)
	return MPIX_Query_cuda_support() ? 1 : 0;
#elif defined(MPICH) && defined(MPIX_GPU_SUPPORT_CUDA)
	int yes = 0;
	if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) != MPI_SUCCESS) return -1;
	return yes ? 1 : 0;
#else
	return -1;
#endif
}
*/
import "C"

// cCUDAAware returns 1 (CUDA-aware), 0 (not) or -1 (MPI cannot tell).
func cCUDAAware() int { return int(C.gccl_cuda_aware()) }
