// Block-level data movement: reduce several sources into several
// destinations, and plain copies, with 16-byte vectors when every pointer
// allows it.
#pragma once

#include "common.cuh"

// reduceVecs folds U 16-byte vectors per thread, U*blockDim.x apart from
// v (in vectors), of the nsrc sources in source order and stores the
// results to every destination. The U loads of one source are issued
// together, so each thread keeps U requests in flight (NVLink latency).
template <typename T, int OP, int U>
__device__ __forceinline__ void reduceVecs(const Red<T, OP> &red, char *const *src, int nsrc, char *const *dst, int ndst,
					   size_t v) {
	typedef typename Num<T>::Acc Acc;
	constexpr int N = 16 / sizeof(T);
	Acc acc[U][N];
	uint4 raw[U];
#pragma unroll
	for (int u = 0; u < U; u++) raw[u] = load16(src[0] + (v + (size_t)u * blockDim.x) * 16);
#pragma unroll
	for (int u = 0; u < U; u++) {
		const T *e = reinterpret_cast<const T *>(&raw[u]);
#pragma unroll
		for (int j = 0; j < N; j++) acc[u][j] = red.in(e[j], 0);
	}
	for (int k = 1; k < nsrc; k++) {
#pragma unroll
		for (int u = 0; u < U; u++) raw[u] = load16(src[k] + (v + (size_t)u * blockDim.x) * 16);
#pragma unroll
		for (int u = 0; u < U; u++) {
			const T *e = reinterpret_cast<const T *>(&raw[u]);
#pragma unroll
			for (int j = 0; j < N; j++) acc[u][j] = red.comb(acc[u][j], red.in(e[j], k));
		}
	}
#pragma unroll
	for (int u = 0; u < U; u++) {
		uint4 res;
		T *o = reinterpret_cast<T *>(&res);
#pragma unroll
		for (int j = 0; j < N; j++) o[j] = red.post(acc[u][j]);
		for (int k = 0; k < ndst; k++) store16(dst[k] + (v + (size_t)u * blockDim.x) * 16, res);
	}
}

// reduceCopy folds nsrc arrays of nelem T elementwise, in source order (so
// every rank computes bit-identical results), and stores the result to
// each of the ndst destinations. Source red.own is this rank's raw input
// (premulsum scales it). It uses the calling block's threads.
template <typename T, int OP>
__device__ __forceinline__ void reduceCopy(const Red<T, OP> &red, char *const *src, int nsrc, char *const *dst,
					   int ndst, size_t nelem) {
	constexpr int N = 16 / sizeof(T);
	constexpr int U = sizeof(T) >= 2 ? 4 : 2; // 8-bit types hold 16 accumulators per vector
	typedef typename Num<T>::Acc Acc;
	bool vec = true;
	for (int k = 0; k < nsrc; k++) vec = vec && aligned16(src[k]);
	for (int k = 0; k < ndst; k++) vec = vec && aligned16(dst[k]);
	const size_t nvec = vec ? nelem / N : 0;
	size_t v = threadIdx.x;
	for (; v + (size_t)(U - 1) * blockDim.x < nvec; v += (size_t)U * blockDim.x)
		reduceVecs<T, OP, U>(red, src, nsrc, dst, ndst, v);
	for (; v < nvec; v += blockDim.x) reduceVecs<T, OP, 1>(red, src, nsrc, dst, ndst, v);
	for (size_t i = nvec * N + threadIdx.x; i < nelem; i += blockDim.x) {
		const size_t off = i * sizeof(T);
		Acc acc = red.in(load1<T>(src[0] + off), 0);
		for (int k = 1; k < nsrc; k++) acc = red.comb(acc, red.in(load1<T>(src[k] + off), k));
		const T r = red.post(acc);
		for (int k = 0; k < ndst; k++) *reinterpret_cast<T *>(dst[k] + off) = r;
	}
}

// copyStrided copies nbytes from src to each of the ndst destinations; this
// thread takes the 16-byte vectors first, first+stride, ... (and the same
// bytes when a pointer is not 16-byte aligned).
__device__ __forceinline__ void copyStrided(const char *src, char *const *dst, int ndst, size_t nbytes, size_t first,
	size_t stride) {
	bool vec = aligned16(src);
	for (int k = 0; k < ndst; k++) vec = vec && aligned16(dst[k]);
	const size_t nvec = vec ? nbytes / 16 : 0;
	constexpr int U = 8; // loads in flight per thread
	size_t v = first;
	for (; v + (size_t)(U - 1) * stride < nvec; v += (size_t)U * stride) {
		uint4 x[U];
#pragma unroll
		for (int u = 0; u < U; u++) x[u] = load16(src + (v + (size_t)u * stride) * 16);
		for (int k = 0; k < ndst; k++) {
#pragma unroll
			for (int u = 0; u < U; u++) store16(dst[k] + (v + (size_t)u * stride) * 16, x[u]);
		}
	}
	for (; v < nvec; v += stride) {
		const uint4 x = load16(src + v * 16);
		for (int k = 0; k < ndst; k++) store16(dst[k] + v * 16, x);
	}
	for (size_t i = nvec * 16 + first; i < nbytes; i += stride) {
		const char x = *(const volatile char *)(src + i);
		for (int k = 0; k < ndst; k++) dst[k][i] = x;
	}
}

// copyBytes copies nbytes from src to each of the ndst destinations, the
// block's threads striding.
__device__ __forceinline__ void copyBytes(const char *src, char *const *dst, int ndst, size_t nbytes) {
	copyStrided(src, dst, ndst, nbytes, threadIdx.x, blockDim.x);
}

// ownCopy copies nelem T of this rank's input from src to the ndst
// destinations as it enters a reduction: premulsum scales it by this
// rank's factor, other operators copy the bytes.
template <typename T, int OP>
__device__ __forceinline__ void ownCopy(const Red<T, OP> &red, const char *src, char *const *dst, int ndst, size_t nelem) {
	if constexpr (OP == OP_PREMULSUM) {
		char *s = const_cast<char *>(src);
		reduceCopy<T, OP>(red.ownAt(0), &s, 1, dst, ndst, nelem);
	} else {
		copyBytes(src, dst, ndst, nelem * sizeof(T));
	}
}

// splitSeg is the segment length for a channel's slice of n bytes whose
// steps alternate between ranks (a root copies in, then every rank moves
// its part, then copies out; a sender stages, then its receiver pulls):
// with the slice in one or two segments of at most seg bytes those steps
// would run one after another, so it is cut into at least parts segments
// of at least 64 KiB (16-byte multiples), which overlap one step of one
// segment with the next step of the previous. The staged collectives take
// four parts, the point-to-point kernel three (p2p.cu says why).
__device__ __forceinline__ size_t splitSeg(size_t seg, size_t n, int parts) {
	size_t part = ((n + parts - 1) / parts + 15) / 16 * 16;
	if (part < ((size_t)64 << 10)) part = (size_t)64 << 10;
	return smin(seg, part);
}

// byteSlice is the part of an nbytes buffer that this block (channel) owns.
__device__ __forceinline__ void byteSlice(size_t nbytes, size_t &begin, size_t &end) {
	size_t per = (nbytes + gridDim.x - 1) / gridDim.x;
	per = (per + 15) / 16 * 16;
	begin = smin(nbytes, per * blockIdx.x);
	end = smin(nbytes, begin + per);
}
