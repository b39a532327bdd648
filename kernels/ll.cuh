// One-shot (LL) collectives: small operations on user buffers the peers do
// not map. Every rank stores its data as LL lines (sync.cuh) straight into
// the peers' direct areas and waits for the lines it receives; no barrier.
//
// Each rank's direct area has two halves used by alternate launches (the
// LL epoch's parity); a half holds nranks slots, slot s receiving what rank
// s sends. A rank writes a half of a peer's area again two launches later,
// which is safe only once that peer has finished the launch that read it.
// Every launch therefore makes every rank hear from every peer (a data line
// or, where an operation sends nothing that way, a hello line): hearing
// from the peer in launch e+1 proves it started e+1, so (stream order) it
// finished e. Broadcast and reduce send one way, so they exchange hellos:
// between the root and the others the way no data goes, and between every
// two non-roots, which exchange no data at all. (With hellos to the root
// only, a non-root A could finish e+1 on the root's data alone and, in e+2,
// overwrite its slot in non-root B's half while B, descheduled, still read
// A's lines of e: wrong data or a wait that never ends, seen with three
// processes sharing one GPU.)
#pragma once

#include "sync.cuh"

// LLHalf is this launch's half of every rank's direct area.
struct LLHalf {
	uint32_t epoch;  // the flag of this launch's lines
	size_t region;   // offset of the half in each area
	size_t slot;     // bytes of one slot
	// at is slot s of the half of area (a rank's direct area, mapped here).
	__device__ __forceinline__ char *at(char *area, int s) const { return area + region + (size_t)s * slot; }
};

// llBegin starts a launch whose slots hold slot bytes each. When nranks
// slots do not fit in a half it fails the launch (GCCL_STATUS_BADARGS),
// ends it and returns false.
__device__ __forceinline__ bool llBegin(const gcclComm &c, size_t slot, LLHalf &h) {
	h.epoch = llEpoch(c);
	const size_t half = c.scratchBytes / 2 / 16 * 16;
	h.slot = slot;
	h.region = (h.epoch & 1) * half;
	if ((size_t)c.nranks * slot > half) {
		if (threadIdx.x == 0) fail(c, GCCL_STATUS_BADARGS);
		llFinish(c, h.epoch);
		return false;
	}
	return true;
}

// llUnits is the number of 8-byte units (LL line pairs) of nbytes.
__device__ __forceinline__ size_t llUnits(size_t nbytes) { return (nbytes + 7) / 8; }

// forEachUnit calls f(u) for this thread's units of units (grid-stride)
// until f returns false (a wait gave up).
template <typename F> __device__ __forceinline__ void forEachUnit(size_t units, F f) {
	for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units; u += (size_t)gridDim.x * blockDim.x)
		if (!f(u)) return;
}

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

// storeUnit writes unit u of a bytes-long buffer (the part that exists).
__device__ __forceinline__ void storeUnit(char *p, size_t u, size_t bytes, uint2 v) {
	const size_t off = u * 8;
	if (off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
		*reinterpret_cast<uint2 *>(p + off) = v;
		return;
	}
	const unsigned char *s = reinterpret_cast<const unsigned char *>(&v);
	for (size_t i = 0; i < 8 && off + i < bytes; i++) p[off + i] = s[i];
}

// llPull waits for unit u of the slot rank r fills in this rank's half.
__device__ __forceinline__ bool llPull(const gcclComm &c, const LLHalf &h, int r, size_t u, uint2 &v, Waiter &w) {
	return llLoad(h.at(c.scratch[c.rank], r) + u * 16, h.epoch, v, w);
}

// llPush stores unit u into this rank's slot of peer p's half.
__device__ __forceinline__ void llPush(const gcclComm &c, const LLHalf &h, int p, size_t u, uint2 v) {
	llStore(h.at(c.scratch[p], c.rank) + u * 16, v, h.epoch);
}

// llReduceUnit folds unit u of every rank in rank order (bit-identical on
// every rank): this rank's is mine, the others' come from their slots in
// this rank's half. False when a wait gave up.
template <typename T, int OP>
__device__ __forceinline__ bool llReduceUnit(const gcclComm &c, const LLHalf &h, const Red<T, OP> &red, size_t u,
					     uint2 mine, uint2 &res) {
	typedef typename Num<T>::Acc Acc;
	constexpr int E = 8 / sizeof(T);
	Acc acc[E];
	Waiter w(c);
	for (int r = 0; r < c.nranks; r++) {
		uint2 v = mine;
		if (r != c.rank && !llPull(c, h, r, u, v, w)) return false;
		const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
		for (int j = 0; j < E; j++) acc[j] = r == 0 ? red.pre(e[j]) : red.comb(acc[j], red.pre(e[j]));
	}
	T *o = reinterpret_cast<T *>(&res);
#pragma unroll
	for (int j = 0; j < E; j++) o[j] = red.post(acc[j]);
	return true;
}

// llHello sends a hello line (unit 0 of this rank's slot) to every peer
// but skip (skip < 0: every peer). Block 0 does it, one thread per peer.
__device__ __forceinline__ void llHello(const gcclComm &c, const LLHalf &h, int skip) {
	const int t = threadIdx.x;
	if (blockIdx.x == 0 && t < c.nranks && t != c.rank && t != skip) llPush(c, h, t, 0, make_uint2(0, 0));
}

// llHear waits for the hello line of every peer but skip (skip < 0: every
// peer). Block 0 does it; the launch ends only after it.
__device__ __forceinline__ void llHear(const gcclComm &c, const LLHalf &h, int skip) {
	const int t = threadIdx.x;
	if (blockIdx.x == 0 && t < c.nranks && t != c.rank && t != skip) {
		Waiter w(c);
		uint2 v;
		llPull(c, h, t, 0, v, w);
	}
}
