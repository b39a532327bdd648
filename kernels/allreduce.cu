// All-reduce over NVLink-mapped peer buffers, three ways:
//   oneshot   small sizes: LL flag-in-data pushes, every rank reduces all;
//   twoshot   medium sizes, peers' buffers mapped: reduce-scatter by reading
//             peers, all-gather by storing to peers;
//   pipelined larger sizes, user buffers not mapped: the two-shot through
//             each rank's mapped scratch buffer, segment by segment.
// Every block is one channel; grids must be co-resident (<= one block per SM).
#include "instantiate.cuh"
#include "ll.cuh"
#include "reduce.cuh"
#include "staged.cuh"
#include "sync.cuh"

// allreduce_oneshot: c.in[rank] -> c.out[rank]; c.scratch[r] is rank r's
// direct area (ll.cuh): each rank stores its input into its slot of every
// peer's half and reduces every rank's copy, in rank order (premulsum: its
// input scaled by its factor first). A communicator's one-shot launches
// must run in order on each rank.
template <typename T, int OP>
__device__ __forceinline__ void allreduce_oneshot(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	const int n = c.nranks, me = c.rank;
	const size_t bytes = count * sizeof(T), units = llUnits(bytes);
	LLHalf h;
	if (!llBegin(c, units * 16, h)) return;
	forEachUnit(units, [&](size_t u) {
		const uint2 mine = red.scaleUnit(loadUnit(c.in[me], u, bytes));
		for (int p = 0; p < n; p++)
			if (p != me) llPush(c, h, p, u, mine);
		uint2 res;
		if (!llReduceUnit<T, OP>(c, h, red, u, mine, res)) return false;
		storeUnit(c.out[me], u, bytes, res);
		return true;
	});
	llFinish(c, h.epoch);
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
// (registered user buffers or staged copies), all mapped here. It reads the
// peers' raw inputs, so it has no premulsum (premulRefused).
template <typename T, int OP>
__device__ __forceinline__ void allreduce_twoshot(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	if (premulRefused<OP>(c) || !collStart(c)) return;
	size_t b, e, pb, pe;
	channelSlice<T>(count, b, e);
	part<T>(b, e, c.rank, c.nranks, pb, pe);
	reduceBroadcast<T, OP>(c, c.in, c.out, pb, pe, red);
	collBarrier(c);
}

// allreduce_push: c.in[rank] -> c.out[rank]; c.scratch[r] is rank r's
// direct area (the LL area), two halves used by alternate launches (the LL
// epoch, shared with the one-shot), each holding nranks slots of the
// count*size bytes rounded up to 16. Each channel stores its slice of the
// input into its slot of every peer's half, meets the same channel of
// every rank at one barrier, then reduces the slice from all slots (its
// own from its input) into its output, in rank order on every rank
// (premulsum: each rank scales its input as it stores it and as it reduces
// it). No end barrier: a rank writes a half again two launches later, by
// when every peer's launch that read it has finished (stream order).
template <typename T, int OP>
__device__ __forceinline__ void allreduce_push(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	const int n = c.nranks, me = c.rank;
	LLHalf h;
	if (!llBegin(c, (count * sizeof(T) + 15) / 16 * 16, h)) return;
	size_t b, e;
	channelSlice<T>(count, b, e);
	const size_t off = b * sizeof(T), nbytes = (e - b) * sizeof(T);
	char *d[GCCL_MAX_RANKS];
	int nd = 0;
	for (int r = 0; r < n; r++)
		if (r != me) d[nd++] = h.at(c.scratch[r], me) + off;
	if (nbytes > 0) ownCopy<T, OP>(red, c.in[me] + off, d, nd, e - b);
	if (collBarrier(c) && nbytes > 0) {
		char *s[GCCL_MAX_RANKS];
		for (int r = 0; r < n; r++) s[r] = r == me ? c.in[me] + off : h.at(c.scratch[me], r) + off;
		char *o = c.out[me] + off;
		reduceCopy<T, OP>(red.ownAt(me), s, n, &o, 1, e - b);
	}
	llFinish(c, h.epoch);
}

// allreduce_pipelined: c.in[rank] -> c.out[rank] through the scratch
// buffers (staged.cuh): each rank reduces its part of every segment from
// all ranks' scratch into all ranks' scratch.
template <typename T, int OP>
__device__ __forceinline__ void allreduce_pipelined(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	staged(c, count * sizeof(T), StagedAllReduce<T, OP>{c, red});
}

GCCL_INSTANTIATE_RED(allreduce_oneshot)
GCCL_INSTANTIATE_RED(allreduce_twoshot)
GCCL_INSTANTIATE_RED(allreduce_pipelined)
GCCL_INSTANTIATE_RED(allreduce_push)
