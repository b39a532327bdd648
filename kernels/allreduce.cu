// All-reduce over NVLink-mapped peer buffers, three ways:
//   oneshot   small sizes: LL flag-in-data pushes, every rank reduces all;
//   twoshot   medium sizes, peers' buffers mapped: reduce-scatter by reading
//             peers, all-gather by storing to peers;
//   pipelined larger sizes, user buffers not mapped: the two-shot through
//             each rank's mapped scratch buffer, segment by segment.
// Every block is one channel; grids must be co-resident (<= one block per SM).
#include "instantiate.cuh"
#include "reduce.cuh"
#include "staged.cuh"
#include "sync.cuh"

// loadUnit reads 8 bytes at unit u of a bytes-long buffer, zero padded.
__device__ __forceinline__ uint2 loadUnit(const char *p, size_t u, size_t bytes) {
	const size_t off = u * 8;
	if (off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) & 7) == 0)
		return *reinterpret_cast<const uint2 *>(p + off);
	uint2 v = make_uint2(0, 0);
	unsigned char *d = reinterpret_cast<unsigned char *>(&v);
	for (size_t i = 0; i < 8 && off + i < bytes; i++) d[i] = p[off + i];
	return v;
}

__device__ __forceinline__ void storeUnit(char *p, size_t u, size_t bytes, uint2 v) {
	const size_t off = u * 8;
	if (off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
		*reinterpret_cast<uint2 *>(p + off) = v;
		return;
	}
	const unsigned char *s = reinterpret_cast<const unsigned char *>(&v);
	for (size_t i = 0; i < 8 && off + i < bytes; i++) p[off + i] = s[i];
}

// allreduce_oneshot: c.in[rank] -> c.out[rank]; c.scratch[r] is rank r's LL
// buffer: two halves, each holding nranks slots of ceil(count*size/8)*16
// bytes. A communicator's one-shot launches must run in order on each rank.
template <typename T, int OP> __device__ __forceinline__ void allreduce_oneshot(const gcclComm &c, size_t count, double scalar) {
	typedef typename Num<T>::Acc Acc;
	constexpr int E = 8 / sizeof(T);
	const int n = c.nranks, me = c.rank;
	const size_t bytes = count * sizeof(T), units = (bytes + 7) / 8, slot = units * 16;
	const uint32_t epoch = llEpoch(c);
	// The scratch is split in two fixed halves used by alternate epochs, so
	// the next launch (whatever its count) never overwrites slots a slower
	// peer still reads.
	const size_t half = c.scratchBytes / 2 / 16 * 16;
	if ((size_t)n * slot > half) {
		if (threadIdx.x == 0) fail(c, GCCL_STATUS_BADARGS);
		llFinish(c, epoch);
		return;
	}
	const size_t region = (epoch & 1) * half;
	const Red<T, OP> red(scalar, n);
	for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units; u += (size_t)gridDim.x * blockDim.x) {
		const uint2 mine = loadUnit(c.in[me], u, bytes);
		for (int p = 0; p < n; p++)
			if (p != me) llStore(c.scratch[p] + region + me * slot + u * 16, mine, epoch);
		Acc acc[E];
		Waiter w(c);
		bool ok = true;
		for (int r = 0; r < n && ok; r++) {
			uint2 v = mine;
			if (r != me) ok = llLoad(c.scratch[me] + region + r * slot + u * 16, epoch, v, w);
			const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
			for (int j = 0; j < E; j++) acc[j] = r == 0 ? red.pre(e[j]) : red.comb(acc[j], red.pre(e[j]));
		}
		if (!ok) break;
		uint2 res;
		T *o = reinterpret_cast<T *>(&res);
#pragma unroll
		for (int j = 0; j < E; j++) o[j] = red.post(acc[j]);
		storeUnit(c.out[me], u, bytes, res);
	}
	llFinish(c, epoch);
}

// reduceBroadcast reduces elements [b, e) of every rank's src buffer and
// stores the result to every rank's dst buffer.
template <typename T, int OP>
__device__ __forceinline__ void reduceBroadcast(const gcclComm &c, char *const *src, char *const *dst, size_t b, size_t e,
						const Red<T, OP> &red) {
	char *s[GCCL_MAX_RANKS], *d[GCCL_MAX_RANKS];
	for (int r = 0; r < c.nranks; r++) {
		s[r] = src[r] + b * sizeof(T);
		d[r] = dst[r] + b * sizeof(T);
	}
	reduceCopy<T, OP>(red, s, c.nranks, d, c.nranks, e - b);
}

// allreduce_twoshot: c.in[r] and c.out[r] are every rank's input and output
// (registered user buffers or staged copies), all mapped here.
template <typename T, int OP> __device__ __forceinline__ void allreduce_twoshot(const gcclComm &c, size_t count, double scalar) {
	if (!collStart(c)) return;
	size_t b, e, pb, pe;
	channelSlice<T>(count, b, e);
	part<T>(b, e, c.rank, c.nranks, pb, pe);
	reduceBroadcast<T, OP>(c, c.in, c.out, pb, pe, Red<T, OP>(scalar, c.nranks));
	collBarrier(c);
}

// allreduce_push: c.in[rank] -> c.out[rank]; c.scratch[r] is rank r's
// direct area (the LL area), two halves used by alternate launches (the LL
// epoch, shared with the one-shot), each holding nranks slots of the
// count*size bytes rounded up to 16. Each channel stores its slice of the
// input into its slot of every peer's half, meets the same channel of
// every rank at one barrier, then reduces the slice from all slots (its
// own from its input) into its output, in rank order on every rank. No
// end barrier: a rank writes a half again two launches later, by when
// every peer's launch that read it has finished (stream order).
template <typename T, int OP> __device__ __forceinline__ void allreduce_push(const gcclComm &c, size_t count, double scalar) {
	const int n = c.nranks, me = c.rank;
	const size_t slot = (count * sizeof(T) + 15) / 16 * 16;
	const size_t half = c.scratchBytes / 2 / 16 * 16;
	const uint32_t epoch = llEpoch(c);
	if ((size_t)n * slot > half) {
		if (threadIdx.x == 0) fail(c, GCCL_STATUS_BADARGS);
		llFinish(c, epoch);
		return;
	}
	const size_t region = (epoch & 1) * half;
	size_t b, e;
	channelSlice<T>(count, b, e);
	const size_t off = b * sizeof(T), nbytes = (e - b) * sizeof(T);
	char *d[GCCL_MAX_RANKS];
	int nd = 0;
	for (int r = 0; r < n; r++)
		if (r != me) d[nd++] = c.scratch[r] + region + me * slot + off;
	if (nbytes > 0) copyBytes(c.in[me] + off, d, nd, nbytes);
	if (collBarrier(c) && nbytes > 0) {
		char *s[GCCL_MAX_RANKS];
		for (int r = 0; r < n; r++) s[r] = r == me ? c.in[me] + off : c.scratch[me] + region + r * slot + off;
		char *o = c.out[me] + off;
		reduceCopy<T, OP>(Red<T, OP>(scalar, n), s, n, &o, 1, e - b);
	}
	llFinish(c, epoch);
}

// allreduce_pipelined: c.in[rank] -> c.out[rank] through the scratch
// buffers (staged.cuh): each rank reduces its part of every segment from
// all ranks' scratch into all ranks' scratch.
template <typename T, int OP> __device__ __forceinline__ void allreduce_pipelined(const gcclComm &c, size_t count, double scalar) {
	staged(c, count * sizeof(T), StagedAllReduce<T, OP>{c, Red<T, OP>(scalar, c.nranks)});
}

GCCL_INSTANTIATE_RED(allreduce_oneshot)
GCCL_INSTANTIATE_RED(allreduce_twoshot)
GCCL_INSTANTIATE_RED(allreduce_pipelined)
GCCL_INSTANTIATE_RED(allreduce_push)
