// Reduce-scatter, reduce, all-gather, broadcast, point-to-point copies and
// barriers over NVLink-mapped peer buffers. Every block is one channel that
// owns a contiguous slice; a start barrier makes sure every rank's buffers
// are ready (its earlier stream work done), an end barrier that no rank
// returns while a peer still reads or writes its buffers.
#include "instantiate.cuh"
#include "reduce.cuh"
#include "staged.cuh"
#include "sync.cuh"

// reducescatter: c.in[r] holds nranks*count elements on every rank r;
// rank i's block i (count elements) is reduced into c.out[rank]. It reads
// the peers' raw inputs, so it has no premulsum (premulRefused).
template <typename T, int OP>
__device__ __forceinline__ void reducescatter(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	if (premulRefused<OP>(c) || !collStart(c)) return;
	size_t b, e;
	channelSlice<T>(count, b, e);
	char *s[GCCL_MAX_RANKS];
	const size_t base = ((size_t)c.rank * count + b) * sizeof(T);
	for (int r = 0; r < c.nranks; r++) s[r] = c.in[r] + base;
	char *d = c.out[c.rank] + b * sizeof(T);
	reduceCopy<T, OP>(red, s, c.nranks, &d, 1, e - b);
	collBarrier(c);
}

// reduce: every rank reduces its part of each slice from all c.in[r] into
// the root's output c.out[root] (mapped here), so all GPUs share the work.
// It reads the peers' raw inputs, so it has no premulsum (premulRefused).
template <typename T, int OP> __device__ __forceinline__ void reduce(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	if (premulRefused<OP>(c) || !collStart(c)) return;
	size_t b, e, pb, pe;
	channelSlice<T>(count, b, e);
	part<T>(b, e, c.rank, c.nranks, pb, pe);
	char *s[GCCL_MAX_RANKS];
	for (int r = 0; r < c.nranks; r++) s[r] = c.in[r] + pb * sizeof(T);
	char *d = c.out[c.root] + pb * sizeof(T);
	reduceCopy<T, OP>(red, s, c.nranks, &d, 1, pe - pb);
	collBarrier(c);
}

GCCL_INSTANTIATE_RED(reducescatter)
GCCL_INSTANTIATE_RED(reduce)

// The staged forms (user buffers not mapped by peers), one kernel per
// operation through the scratch buffers (staged.cuh). reducescatter_staged:
// count elements per block; reduce_staged: count elements.
template <typename T, int OP>
__device__ __forceinline__ void reducescatter_staged(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	staged(c, count * sizeof(T), StagedReduceScatter<T, OP>{c, red, count * sizeof(T)});
}

template <typename T, int OP>
__device__ __forceinline__ void reduce_staged(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	staged(c, count * sizeof(T), StagedReduce<T, OP>{c, red});
}

GCCL_INSTANTIATE_RED(reducescatter_staged)
GCCL_INSTANTIATE_RED(reduce_staged)

// gccl_allgather_staged: nbytes per rank, every rank's c.in[rank] into
// every rank's c.out[rank] at rank*nbytes, through the scratch buffers.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_allgather_staged(const gcclComm c, unsigned long long nbytes) {
	staged(c, nbytes, StagedAllGather{c, (size_t)nbytes});
}

// gccl_broadcast_staged: the root's nbytes c.in[root] into every rank's
// c.out[rank], through the scratch buffers.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_broadcast_staged(const gcclComm c, unsigned long long nbytes) {
	staged(c, nbytes, StagedBroadcast{c});
}

// gccl_allgather: rank i stores its nbytes input c.in[rank] at offset
// i*nbytes of every rank's output c.out[r].
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_allgather(const gcclComm c, unsigned long long nbytes) {
	if (!collStart(c)) return;
	size_t b, e;
	byteSlice(nbytes, b, e);
	char *d[GCCL_MAX_RANKS];
	for (int r = 0; r < c.nranks; r++) d[r] = c.out[r] + (size_t)c.rank * nbytes + b;
	copyBytes(c.in[c.rank] + b, d, c.nranks, e - b);
	collBarrier(c);
}

// gccl_broadcast: the root's nbytes input c.in[root] lands in every rank's
// c.out[r]; each rank pulls its part of each slice from the root and
// stores it to all ranks, so the root's links carry the data once.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_broadcast(const gcclComm c, unsigned long long nbytes) {
	if (!collStart(c)) return;
	size_t b, e, pb, pe;
	byteSlice(nbytes, b, e);
	part<unsigned char>(b, e, c.rank, c.nranks, pb, pe);
	char *d[GCCL_MAX_RANKS];
	for (int r = 0; r < c.nranks; r++) d[r] = c.out[r] + pb;
	copyBytes(c.in[c.root] + pb, d, c.nranks, pe - pb);
	collBarrier(c);
}

// gccl_p2p_copy: one send/recv pair; c.root is the peer. The receiver
// (recv != 0) pulls nbytes from the sender's buffer c.in[peer] into its
// c.out[rank]; the sender only synchronises, so it does not reuse its
// buffer before the copy is done.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS)
	gccl_p2p_copy(const gcclComm c, unsigned long long nbytes, int recv) {
	if (!p2pBarrier(c, c.root)) return;
	if (recv) {
		size_t b, e;
		byteSlice(nbytes, b, e);
		char *d = c.out[c.rank] + b;
		copyBytes(c.in[c.root] + b, &d, 1, e - b);
	}
	p2pBarrier(c, c.root);
}

// gccl_copy: a one-rank collective that is a copy, nbytes from c.in[rank]
// to c.out[rank], every thread of the grid striding over the vectors (an
// eager one below the size where the copy engine takes over: its launch
// costs the host less and, up to what the L2 holds, it moves the bytes
// faster). No barrier: the blocks never wait for each other.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_copy(const gcclComm c, unsigned long long nbytes) {
	char *d = c.out[c.rank];
	copyStrided(c.in[c.rank], &d, 1, nbytes, blockIdx.x * (size_t)blockDim.x + threadIdx.x, (size_t)gridDim.x * blockDim.x);
}

// gccl_barrier: every channel of every rank meets (collective flags).
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_barrier(const gcclComm c) { collBarrier(c); }

// gccl_fill_u32: p[i] = seed ^ (i * 2654435761) for i < n. A trivial kernel
// for driver and launch tests.
extern "C" __global__ void gccl_fill_u32(uint32_t *p, unsigned long long n, uint32_t seed) {
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = seed ^ (uint32_t)(i * 2654435761ull);
}
