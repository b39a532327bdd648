// Command gccl-perf measures gccl's collectives the way NVIDIA's nccl-tests
// measure NCCL's, and compares them with a baseline library in the same run.
//
//	mpirun -np 4 gccl-perf -op allreduce -b 1K -e 64M -f 2 -baseline mpi
//	gccl-perf -np 4 -op all -b 8 -e 1M          # goroutine ranks, no MPI
//
// Under mpirun each process is one rank: MPI starts the job, rank 0 makes
// gccl's unique ID and MPI broadcasts it (mpiboot.NewComm). With -np N the
// N ranks are goroutines of one process (comm.InitAllN).
//
// For each operation (-op allreduce, allgather, reducescatter, broadcast,
// reduce, sendrecv, alltoall or all) and each size of the sweep (-b to -e,
// multiplying by -f or adding -i), every rank first runs the operation once
// on random inputs with its output poisoned (each element set to the
// complement of its expected value) and counts the elements that differ
// from a reference (internal/reduce: exact for integers, a relative
// tolerance for floats); then it runs -w warm-up and -n timed iterations,
// each timed from launch to completion on the rank. The ranks all-gather
// their times (MPI, or an in-process exchange): an iteration's time is the
// slowest rank's, a size's time is the median over iterations, and the
// bandwidths follow nccl-tests (algbw = size/time, busbw = algbw × the
// operation's bus factor). Sizes and counts are those nccl-tests prints:
// for all-gather, reduce-scatter and all-to-all the size is the whole
// buffer and the count argument is size/nranks.
//
// Rank 0 prints one table per operation in nccl-tests' layout, with the
// baseline's columns and the time ratio gccl/baseline per size (below 1:
// gccl is faster), then the wrong-element totals, the average bus
// bandwidth and the geometric mean of the ratios. -csv, -png and -json
// write the same rows to files; -progress shows the sweep on stderr.
//
// Baselines (-baseline): "mpi" runs MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Sendrecv and
// MPI_Alltoall (mpiboot.Collectives) on the same host buffers; it needs
// mpirun and MPI's native types (int8..uint64, float32, float64) and
// operators (sum, prod, max, min). "nccl" is registered by the GPU build
// in the baselines table. A baseline is a small interface (Name, Supports,
// Run, Close), so others plug in the same way.
//
// -inplace runs the in-place forms as NCCL defines them (send/recv and
// all-to-all have none and are skipped). -graph asks for CUDA graph launch,
// which the host backend does not have: it stops with an error saying so.
//
// Exit status: 0 success, 1 a failure (printed on stderr by the rank that
// saw it; under mpirun the job is aborted so no rank waits), 2 bad flags,
// 3 gccl produced wrong results.
package main
