// gccl kernels: shared definitions.
//
// Every kernel takes a gcclComm by value: the peers' buffers mapped into this
// GPU (CUDA IPC or cuMem import), the flag and counter arrays used for
// cross-GPU synchronisation, and the abort/timeout controls. See
// docs/gpu.md for the meaning of each field per kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#define GCCL_MAX_RANKS 8
#define GCCL_MAX_CHANNELS 64
#define GCCL_THREADS 512

// Flag array of one rank (GCCL_FLAGS_WORDS uint32, zeroed, mapped by peers):
// [0, R*C): collective barriers, slot src*C + channel;
// [R*C, 2*R*C): point-to-point barriers, same layout;
// [2*R*C, 3*R*C): registration keys of collectives, same layout.
#define GCCL_FLAGS_WORDS (3 * GCCL_MAX_RANKS * GCCL_MAX_CHANNELS)
// Counter array of one rank (GCCL_COUNTER_WORDS uint32, zeroed, local):
// rows 0..R-1: p2p barrier counts per peer; row R: collective barrier
// counts per channel; row R+1: word 0 the LL epoch, word 1 the count of
// blocks done with it.
#define GCCL_COUNTER_WORDS ((GCCL_MAX_RANKS + 2) * GCCL_MAX_CHANNELS)

// Status codes a kernel writes to *status (first failure wins).
#define GCCL_STATUS_OK 0
#define GCCL_STATUS_TIMEOUT 1
#define GCCL_STATUS_ABORTED 2
#define GCCL_STATUS_BADARGS 3
#define GCCL_STATUS_BADUSAGE 4 // ranks launched with different regKey values

struct gcclComm {
	char *in[GCCL_MAX_RANKS];       // per rank: its input (or staging) buffer, mapped here
	char *out[GCCL_MAX_RANKS];      // per rank: its output buffer, mapped here
	char *scratch[GCCL_MAX_RANKS];  // per rank: its LL / staging buffer, mapped here
	uint32_t *flags[GCCL_MAX_RANKS]; // per rank: its flag array, mapped here
	uint32_t *counters;             // this rank's counter array (local)
	volatile uint32_t *abortFlag;   // host-mapped; nonzero aborts every wait (may be null)
	uint32_t *status;               // where a failed wait is reported (may be null)
	unsigned long long timeoutNs;   // a wait longer than this fails (0 = no limit)
	unsigned long long scratchBytes; // bytes of each rank's scratch buffer
	int nranks;
	int rank;
	int root; // broadcast/reduce root, or the peer of a point-to-point copy
	unsigned int regKey; // the op's registered buffers (0: staged); peers must agree
};

// ---- operators ----------------------------------------------------------

enum { OP_SUM = 0, OP_PROD = 1, OP_MAX = 2, OP_MIN = 3, OP_AVG = 4, OP_PREMULSUM = 5 };

// Num<T> gives the accumulation type and conversions; narrow floats
// accumulate in float, everything else in its own type (so integers wrap as
// they do in NCCL).
template <typename T> struct Num {
	typedef T Acc;
	static __device__ __forceinline__ Acc to(T x) { return x; }
	static __device__ __forceinline__ T from(Acc x) { return x; }
};
template <> struct Num<__half> {
	typedef float Acc;
	static __device__ __forceinline__ Acc to(__half x) { return __half2float(x); }
	static __device__ __forceinline__ __half from(Acc x) { return __float2half_rn(x); }
};
template <> struct Num<__nv_bfloat16> {
	typedef float Acc;
	static __device__ __forceinline__ Acc to(__nv_bfloat16 x) { return __bfloat162float(x); }
	static __device__ __forceinline__ __nv_bfloat16 from(Acc x) { return __float2bfloat16_rn(x); }
};
template <> struct Num<__nv_fp8_e4m3> {
	typedef float Acc;
	static __device__ __forceinline__ Acc to(__nv_fp8_e4m3 x) { return float(x); }
	static __device__ __forceinline__ __nv_fp8_e4m3 from(Acc x) { return __nv_fp8_e4m3(x); }
};
template <> struct Num<__nv_fp8_e5m2> {
	typedef float Acc;
	static __device__ __forceinline__ Acc to(__nv_fp8_e5m2 x) { return float(x); }
	static __device__ __forceinline__ __nv_fp8_e5m2 from(Acc x) { return __nv_fp8_e5m2(x); }
};

// Unsigned<T>::U is the type T's products wrap in: integers multiply
// modulo 2^bits (signed overflow is undefined in C++), floats in themselves.
template <typename T> struct Unsigned {
	typedef T U;
};
template <> struct Unsigned<int8_t> {
	typedef uint8_t U;
};
template <> struct Unsigned<int32_t> {
	typedef uint32_t U;
};
template <> struct Unsigned<int64_t> {
	typedef uint64_t U;
};

// scalarOf is premulsum's factor, one T: read by the kernel from device
// memory at p (so in stream order, and afresh at every graph replay) or,
// when p is null, the host-immediate value's bits (the low sizeof(T) bytes).
template <typename T> __device__ __forceinline__ T scalarOf(unsigned long long bits, const void *p) {
	T v;
	unsigned char *d = reinterpret_cast<unsigned char *>(&v);
	const unsigned char *s = p != nullptr ? reinterpret_cast<const unsigned char *>(p)
					      : reinterpret_cast<const unsigned char *>(&bits);
#pragma unroll
	for (int i = 0; i < (int)sizeof(T); i++) d[i] = s[i];
	return v;
}

// Red<T, OP> is the reduction: pre converts an input, comb folds two
// values, post finishes. premulsum is the sum of every rank's input times
// that rank's own factor: each rank scales its own contribution as it
// enters the reduction (scaled, scaleUnit when it sends its input; in with
// own set to its source's index when it reduces its input in place) and the
// rest is a plain sum. avg divides the sum by nranks (integer division for
// integer types, as NCCL).
template <typename T, int OP> struct Red {
	typedef typename Num<T>::Acc Acc;
	Acc scale; // premulsum: this rank's factor
	int n;
	int own; // the source index (reduceCopy) that is this rank's raw input; -1: none
	__device__ __forceinline__ Red(unsigned long long bits, const void *p, int nranks)
		: scale(Acc(1)), n(nranks), own(-1) {
		if constexpr (OP == OP_PREMULSUM) scale = Num<T>::to(scalarOf<T>(bits, p));
	}
	// ownAt is this reduction with source k as this rank's raw input.
	__device__ __forceinline__ Red ownAt(int k) const {
		Red r = *this;
		r.own = k;
		return r;
	}
	static __device__ __forceinline__ Acc mul(Acc a, Acc b) {
		typedef typename Unsigned<Acc>::U U;
		return Acc(U(a) * U(b));
	}
	__device__ __forceinline__ Acc pre(T x) const { return Num<T>::to(x); }
	// in converts source k's element, scaling this rank's raw input.
	__device__ __forceinline__ Acc in(T x, int k) const {
		if constexpr (OP == OP_PREMULSUM) {
			if (k == own) return mul(Num<T>::to(x), scale);
		}
		return Num<T>::to(x);
	}
	// scaled is x times this rank's factor (premulsum), else x.
	__device__ __forceinline__ T scaled(T x) const {
		if constexpr (OP == OP_PREMULSUM) return Num<T>::from(mul(Num<T>::to(x), scale));
		return x;
	}
	// scaleUnit scales the 8 / sizeof(T) elements of an LL unit.
	__device__ __forceinline__ uint2 scaleUnit(uint2 v) const {
		if constexpr (OP == OP_PREMULSUM) {
			T *e = reinterpret_cast<T *>(&v);
#pragma unroll
			for (int j = 0; j < (int)(8 / sizeof(T)); j++) e[j] = scaled(e[j]);
		}
		return v;
	}
	__device__ __forceinline__ Acc comb(Acc a, Acc b) const {
		if constexpr (OP == OP_PROD) return Acc(a * b);
		else if constexpr (OP == OP_MAX) return a < b ? b : a;
		else if constexpr (OP == OP_MIN) return b < a ? b : a;
		else return Acc(a + b);
	}
	__device__ __forceinline__ T post(Acc a) const {
		// Integer types divide with truncation (NCCL's SumPostDiv).
		if constexpr (OP == OP_AVG) return Num<T>::from(Acc(a / Acc(n)));
		return Num<T>::from(a);
	}
};

// ---- memory access ----------------------------------------------------

// Peer memory is read bypassing L1 (it is not coherent with the writer).
__device__ __forceinline__ uint4 load16(const char *p) { return __ldcg(reinterpret_cast<const uint4 *>(p)); }
__device__ __forceinline__ void store16(char *p, uint4 v) { __stcg(reinterpret_cast<uint4 *>(p), v); }

template <typename T> __device__ __forceinline__ T load1(const char *p) {
	T v;
	const volatile unsigned char *s = reinterpret_cast<const volatile unsigned char *>(p);
	unsigned char *d = reinterpret_cast<unsigned char *>(&v);
#pragma unroll
	for (int i = 0; i < (int)sizeof(T); i++) d[i] = s[i];
	return v;
}

__device__ __forceinline__ size_t smin(size_t a, size_t b) { return a < b ? a : b; }

__device__ __forceinline__ bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Slice is the part [begin, end) of a count-element array that one channel
// (block) owns: contiguous, a multiple of 16 bytes except the last.
template <typename T> __device__ __forceinline__ void channelSlice(size_t count, size_t &begin, size_t &end) {
	const size_t align = 16 / sizeof(T);
	size_t per = (count + gridDim.x - 1) / gridDim.x;
	per = (per + align - 1) / align * align;
	begin = smin(count, per * blockIdx.x);
	end = smin(count, begin + per);
}

// Part p of nparts of [begin, end), 16-byte aligned pieces.
template <typename T>
__device__ __forceinline__ void part(size_t begin, size_t end, int p, int nparts, size_t &pb, size_t &pe) {
	const size_t align = 16 / sizeof(T);
	size_t per = (end - begin + nparts - 1) / nparts;
	per = (per + align - 1) / align * align;
	pb = smin(end, begin + per * p);
	pe = smin(end, pb + per);
}
