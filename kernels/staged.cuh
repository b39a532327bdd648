// Staged collectives: user buffers that peers cannot map go through each
// rank's mapped scratch buffer, in one kernel per operation.
//
// Each channel (block) owns scratchBytes/gridDim.x bytes of every rank's
// scratch, as two halves that alternate between segments, and moves its
// slice of the data through them one segment at a time:
//
//	copyIn(0) | start barrier | mid(0) copyIn(1) | barrier | copyOut(0)
//	                          | mid(1) copyIn(2) | barrier | copyOut(1) ...
//
// mid(i) reads and writes peers' halves of segment i; the barrier after it
// also tells every rank that segment i+1 is in. A half is written again only
// by copyIn(i+2), after the next barrier, when no peer reads it any more.
// Nothing touches a peer's scratch before the start barrier: the peer may
// still be copying its previous operation's results out of it.
#pragma once

#include "reduce.cuh"
#include "sync.cuh"

// stagedHalf is the size of each of a channel's two scratch halves.
__device__ __forceinline__ size_t stagedHalf(const gcclComm &c) {
	const size_t quantum = 16 * (size_t)c.nranks;
	return c.scratchBytes / gridDim.x / 2 / quantum * quantum;
}

// staged runs one channel's share of a staged collective of nbytes (per
// rank) with the policy st:
//   st.segBytes(half)       bytes of the slice per segment (16-byte multiple)
//   S::rooted               one rank's steps come before or after the others'
//                           (broadcast, reduce): short slices are split
//                           (splitSeg) so that those steps overlap
//   st.copyIn(mine, b, e)   bytes [b, e) of this rank's data into its half
//   st.mid(scr, b, e)       the cross-rank step on every rank's half
//   st.copyOut(mine, b, e)  the results of [b, e) out of this rank's half
template <typename S> __device__ __forceinline__ void staged(const gcclComm &c, size_t nbytes, const S &st) {
	const int me = c.rank;
	const size_t half = stagedHalf(c);
	size_t seg = st.segBytes(half);
	if (seg == 0) {
		if (threadIdx.x == 0) fail(c, GCCL_STATUS_BADARGS);
		return;
	}
	size_t b, e;
	byteSlice(nbytes, b, e);
	if (S::rooted) seg = splitSeg(seg, e - b, 4);
	char *scr[2][GCCL_MAX_RANKS];
	for (int r = 0; r < c.nranks; r++) {
		scr[0][r] = c.scratch[r] + blockIdx.x * 2 * half;
		scr[1][r] = scr[0][r] + half;
	}
	if (b < e) st.copyIn(scr[0][me], b, smin(e, b + seg));
	if (!collStart(c)) return;
	int h = 0;
	for (size_t sb = b; sb < e; sb += seg, h ^= 1) {
		const size_t se = smin(e, sb + seg);
		st.mid(scr[h], sb, se);
		if (se < e) st.copyIn(scr[h ^ 1][me], se, smin(e, se + seg));
		if (!collBarrier(c)) return;
		st.copyOut(scr[h][me], sb, se);
		__syncthreads();
	}
}

// copyTo copies n bytes from src to dst with the block.
__device__ __forceinline__ void copyTo(char *dst, const char *src, size_t n) {
	if (dst != src) copyBytes(src, &dst, 1, n);
}

// The policies. "Input" is c.in[rank], "output" c.out[rank].

// StagedReduction: every rank's input in (premulsum: scaled by the rank's
// factor); each rank reduces its part of the segment from all halves into
// every half (all-reduce: toAll) or into the root's half only (reduce);
// every rank (all-reduce) or the root (reduce) copies out.
template <typename T, int OP, bool toAll> struct StagedReduction {
	static constexpr bool rooted = !toAll;
	const gcclComm &c;
	Red<T, OP> red;
	__device__ size_t segBytes(size_t half) const { return half; }
	__device__ void copyIn(char *mine, size_t b, size_t e) const {
		ownCopy<T, OP>(red, c.in[c.rank] + b, &mine, 1, (e - b) / sizeof(T));
	}
	__device__ void mid(char *const *s, size_t b, size_t e) const {
		size_t pb, pe;
		part<T>(0, (e - b) / sizeof(T), c.rank, c.nranks, pb, pe);
		char *p[GCCL_MAX_RANKS];
		for (int r = 0; r < c.nranks; r++) p[r] = s[r] + pb * sizeof(T);
		if (toAll) {
			reduceCopy<T, OP>(red, p, c.nranks, p, c.nranks, pe - pb);
		} else {
			char *d = p[c.root];
			reduceCopy<T, OP>(red, p, c.nranks, &d, 1, pe - pb);
		}
	}
	__device__ void copyOut(char *mine, size_t b, size_t e) const {
		if (toAll || c.rank == c.root) copyTo(c.out[c.rank] + b, mine, e - b);
	}
};
template <typename T, int OP> using StagedAllReduce = StagedReduction<T, OP, true>;
template <typename T, int OP> using StagedReduce = StagedReduction<T, OP, false>;

// StagedBroadcast: the root's input in; each rank copies its part of the
// segment from the root's half to every half; every rank copies out.
struct StagedBroadcast {
	static constexpr bool rooted = true;
	const gcclComm &c;
	__device__ size_t segBytes(size_t half) const { return half; }
	__device__ void copyIn(char *mine, size_t b, size_t e) const {
		if (c.rank == c.root) copyTo(mine, c.in[c.rank] + b, e - b);
	}
	__device__ void mid(char *const *s, size_t b, size_t e) const {
		size_t pb, pe;
		part<unsigned char>(0, e - b, c.rank, c.nranks, pb, pe);
		char *d[GCCL_MAX_RANKS];
		int nd = 0;
		for (int r = 0; r < c.nranks; r++)
			if (r != c.root) d[nd++] = s[r] + pb;
		copyBytes(s[c.root] + pb, d, nd, pe - pb);
	}
	__device__ void copyOut(char *mine, size_t b, size_t e) const { copyTo(c.out[c.rank] + b, mine, e - b); }
};

// StagedAllGather: every rank's input in; each rank pulls every peer's
// segment from the peer's half straight into its output (nbytes per rank).
struct StagedAllGather {
	static constexpr bool rooted = false;
	const gcclComm &c;
	size_t nbytes;
	__device__ size_t segBytes(size_t half) const { return half; }
	__device__ void copyIn(char *mine, size_t b, size_t e) const { copyTo(mine, c.in[c.rank] + b, e - b); }
	__device__ void mid(char *const *s, size_t b, size_t e) const {
		char *out = c.out[c.rank];
		for (int k = 1; k < c.nranks; k++) {
			const int r = (c.rank + k) % c.nranks;
			copyTo(out + r * nbytes + b, s[r], e - b);
		}
		copyTo(out + c.rank * nbytes + b, c.in[c.rank] + b, e - b); // skipped in place
	}
	__device__ void copyOut(char *, size_t, size_t) const {}
};

// StagedReduceScatter: every rank's n input blocks of the segment in (slot
// r of the half holds block r; premulsum: scaled by the rank's factor);
// each rank reduces its block from every peer's half, its own from its
// input (scaled as it is read), straight into its output. nbytes is one
// block.
template <typename T, int OP> struct StagedReduceScatter {
	static constexpr bool rooted = false;
	const gcclComm &c;
	Red<T, OP> red;
	size_t nbytes;
	__device__ size_t segBytes(size_t half) const { return half / c.nranks / 16 * 16; }
	__device__ void copyIn(char *mine, size_t b, size_t e) const {
		const size_t seg = segBytes(stagedHalf(c));
		for (int r = 0; r < c.nranks; r++)
			if (r != c.rank) {
				char *d = mine + r * seg;
				ownCopy<T, OP>(red, c.in[c.rank] + r * nbytes + b, &d, 1, (e - b) / sizeof(T));
			}
	}
	__device__ void mid(char *const *s, size_t b, size_t e) const {
		const size_t seg = segBytes(stagedHalf(c));
		char *p[GCCL_MAX_RANKS];
		for (int r = 0; r < c.nranks; r++)
			p[r] = r == c.rank ? c.in[c.rank] + c.rank * nbytes + b : s[r] + c.rank * seg;
		char *d = c.out[c.rank] + b;
		reduceCopy<T, OP>(red.ownAt(c.rank), p, c.nranks, &d, 1, (e - b) / sizeof(T));
	}
	__device__ void copyOut(char *, size_t, size_t) const {}
};
