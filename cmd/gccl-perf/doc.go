// Command gccl-perf measures gccl's collectives the way NVIDIA's nccl-tests
// measure NCCL's, and compares them with a baseline library in the same run.
//
//	mpirun -np 4 gccl-perf -op allreduce -b 1K -e 64M -f 2 -baseline mpi
//	mpirun -np 4 gccl-perf -op halo -halo 2x2 -b 1K -e 4M -baseline mpi
//	gccl-perf -np 4 -op all -b 8 -e 1M          # goroutine ranks, no MPI
//
// Under mpirun each process is one rank: MPI starts the job, rank 0 makes
// gccl's unique ID and MPI broadcasts it (mpiboot.NewComm). With -np N the
// N ranks are goroutines of one process (comm.InitAllN).
//
// For each operation (-op allreduce, allgather, reducescatter, broadcast,
// reduce, sendrecv, alltoall, halo or all) and each size of the sweep (-b to -e,
// multiplying by -f or adding -i), every rank first runs the operation once
// on random inputs with its output poisoned (each element set to the
// complement of its expected value) and counts the elements that differ
// from a reference (internal/reduce: exact for integers, a relative
// tolerance for floats); then it runs -w warm-up and the timed iterations.
// The ranks all-gather their times (MPI, or an in-process exchange): an
// iteration's time is the slowest rank's, a size's time is the median over
// iterations, and the bandwidths follow nccl-tests (algbw = size/time,
// busbw = algbw × the operation's bus factor). Sizes and counts are those
// nccl-tests prints: for all-gather, reduce-scatter and all-to-all the
// size is the whole buffer and the count argument is size/nranks.
// -checkmax bounds the checked sizes (larger rows show N/A).
//
// Halo (-op halo) is p2p.HaloExchange: every rank exchanges a face with
// each neighbour on a Cartesian grid of the ranks (-halo NxM or NxMxK,
// laid out as MPI_Cart_create; default two dimensions balanced over the
// ranks, 2x2 for 4), each face and each halo a distinct buffer, the whole
// exchange one launch. Every dimension is periodic unless
// -haloperiodic=false, which skips the faces past the grid's edges. The
// size is the bytes of one face (the count, its elements). The check
// stages random faces and poisoned halos and checks every element of each
// halo against the face its neighbour sent toward this rank (halos past an
// edge are not checked). Its bandwidths count what a rank sends: algbw =
// the faces a rank sends (those with a neighbour, itself included on a
// periodic dimension of one rank; averaged over the ranks when edges drop
// some) × the face size / time, so 4 × size on a periodic 2-D grid; busbw
// = algbw (bus factor 1, as sendrecv: each sent byte crosses one link
// once). The MPI baseline is the halo step MPI codes write by hand:
// MPI_Irecv and MPI_Isend to each neighbour (the same neighbours,
// p2p.Cart.Neighbors), then MPI_Waitall; NCCL's is one group of ncclSend
// and ncclRecv per neighbour.
//
// Timing. On the host backend each iteration is timed on the host, from
// launch to completion. On a GPU, gccl and the NCCL baseline are timed
// alike, as nccl-tests times NCCL: CUDA events recorded on the stream. The
// warm-up is -w operations launched back to back; a timed iteration is a
// batch of operations between two events, divided by the batch (-batch, or
// automatically ceil(1 MiB/size) up to 32, so that tiny operations are
// not timed by the host's launch latency). With -graph, -n operations are
// captured into one CUDA graph (after the same eager warm-up), launched
// once untimed, then -launches times between events; an iteration is one
// launch divided by -n. The checked run then runs as a one-operation graph,
// and out of place the result left by the timed launches is checked again.
//
// -register allocates the buffers with bufreg.MemAlloc (cuMem VMM on a
// GPU, as ncclMemAlloc) and registers them with gccl (bufreg.Register) and
// with the NCCL baseline (ncclCommRegister); each table's title says which
// libraries the buffers are registered with.
//
// Memory traffic (GPU, -mem, on by default). After each size rank 0 also
// times a device-to-device copy (cuMemcpyDtoDAsync) of the row's size
// with the same events and batches (rotating over buffer pairs whose
// footprint is twice the GPU's L2 cache, so that it measures memory, not
// the cache), and every rank asks its engine which
// path it took (engine.Engine.LastGPUPath: a kernel family, "copy" or
// "none") and how many bytes that path reads and writes in device memory
// (gpu.TrafficOf in internal/engine/gpu, counted from the kernels' loops). Ranks on the same
// GPU add up; the busiest GPU's bytes over gccl's time are memGB/s, the
// copy's read and write bytes over its time copyGB/s, and %copy the one
// over the other, with the path in the last column (and in the CSV and
// JSON). It is the yardstick where NCCL cannot run: with -np N -device 0
// the N ranks share one GPU in one context, so their kernels run side by
// side (NCCL refuses two ranks on one GPU); under mpirun, -device 0 puts
// every process on GPU 0 (the driver time-slices them), and processes that
// share a GPU are not metered (cuMemGetInfo counts the whole device). All-to-all has no figure (N/A).
//
// Profiler ranges (GPU, -profilerange). Each library's warm-up and timed
// iterations at each size run inside a CUDA profiler range
// (cuProfilerStart/Stop), opened after every rank reached it and closed
// after every rank's timed work completed, so that Nsight Compute measures
// the ranks' kernels as they run unprofiled, side by side:
//
//	ncu --replay-mode app-range --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
//	    gccl-perf -np 4 -device 0 -op reducescatter -b 128M -e 128M -profilerange
//
// (kernel replay serialises kernels, and ranks whose kernels wait for one
// another hang under it). Ranges come in the table's order: per size, gccl's
// then the baseline's.
//
// Init cost. Before the tables rank 0 prints one "# init:" line: the wall
// time of gccl's comm.InitRankConfig and, with -baseline nccl, of
// ncclCommInitRank (each rank's, all ranks starting together after the
// unique ID is shared; the slowest rank's, and the median in parentheses)
// and, on a GPU, the device memory each took: the drop in cuMemGetInfo's
// free memory across the init (after a context synchronize; the context
// is made before, so it is not counted), and again including the
// library's first operations (the run's first operation at the smallest
// and largest sizes of its sweep, on memory allocated beforehand), since
// NCCL connects some buffers lazily. Each memory figure is the largest
// over ranks; the ratios are gccl/NCCL. On the host backend memory is N/A.
//
// Rank 0 prints one table per operation in nccl-tests' layout, with the
// baseline's columns and the time ratio gccl/baseline per size (below 1:
// gccl is faster), then the wrong-element totals, the average bus
// bandwidth and the geometric mean of the ratios. After the last table of
// a run with a baseline comes a summary: per operation, the geometric mean
// of the time ratio in the size bands of the project's goals (<= 64 KiB,
// 256 KiB-16 MiB, >= 128 MiB; perf.Bands) and each library's peak bus
// bandwidth. -csv, -png and -json write the rows to files (with -op all,
// one CSV and one PNG per operation: out.csv -> out-allreduce.csv; the
// JSON is one object, {"init": the init costs, "rows": every row});
// -progress shows the sweep on stderr.
//
// Baselines (-baseline): "mpi" runs MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Sendrecv,
// MPI_Alltoall and the hand-written halo (internal/mpi.Collectives) on the
// same host buffers; it needs
// mpirun and MPI's native types (int8..uint64, float32, float64) and
// operators (sum, prod, max, min). "nccl" loads libnccl.so.2 when the run
// starts (internal/nccl) and fails then, on every rank, where there is
// none. A baseline is a small interface (Name, Supports, Close, plus Run
// for the host backend or Launch for GPU streams; Register and Deregister
// for -register), so others plug in the same way (internal/baseline).
//
// -inplace runs the in-place forms as NCCL defines them (send/recv,
// all-to-all and halo have none and are skipped). The host backend has no CUDA
// graphs: -graph there stops with an error saying so.
//
// The code: this package reads the flags, creates the communicators and
// drives each rank's sweep; its internal packages are the parts: lib (the
// libraries and the call they run), baseline, clock (timing), layout,
// check (random inputs, poisoned outputs, wrong elements), arena (the
// sweep's memory and registrations), exchange (the ranks' agreement),
// initcost, memview and report (everything printed or written but the
// table rows, which internal/perf formats).
//
// Exit status: 0 success, 1 a failure (printed on stderr by the rank that
// saw it; under mpirun the job is aborted so no rank waits), 2 bad flags,
// 3 gccl produced wrong results.
package main
