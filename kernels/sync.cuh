// Cross-GPU synchronisation: system-scope flags, bounded waits, barriers
// and LL (flag-in-data) lines.
#pragma once

#include "common.cuh"

#define GCCL_COLL_FLAGS 0
#define GCCL_P2P_FLAGS (GCCL_MAX_RANKS * GCCL_MAX_CHANNELS)
#define GCCL_KEY_SLOTS (2 * GCCL_MAX_RANKS * GCCL_MAX_CHANNELS)
#define GCCL_COLL_ROW GCCL_MAX_RANKS
#define GCCL_LL_ROW (GCCL_MAX_RANKS + 1)

__device__ __forceinline__ uint32_t ldAcquireSys(const uint32_t *p) {
	uint32_t v;
	asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

__device__ __forceinline__ void stReleaseSys(uint32_t *p, uint32_t v) {
	asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned long long globalTimer() {
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// fail records a failure of this launch in *status, which stays set: the
// communicator is broken. The word is host-mapped pinned memory (the host
// reads it without a copy), so it is written with a plain store rather than
// an atomic; when several blocks fail at once, one of their codes stays.
__device__ __forceinline__ void fail(const gcclComm &c, uint32_t code) {
	if (c.status == nullptr) return;
	volatile uint32_t *s = c.status;
	if (*s == GCCL_STATUS_OK) {
		*s = code;
		__threadfence_system();
	}
}

// premulRefused fails the launch of a premulsum entry of a kernel that
// reads the peers' raw inputs (zero-copy): only the owner of an input knows
// its factor. The engine never launches those (it stages premulsum); every
// rank returns at once, before any barrier, so none waits for another.
template <int OP> __device__ __forceinline__ bool premulRefused(const gcclComm &c) {
	if constexpr (OP == OP_PREMULSUM) {
		if (blockIdx.x == 0 && threadIdx.x == 0) fail(c, GCCL_STATUS_BADARGS);
		return true;
	}
	return false;
}

// Waiter bounds one wait: it gives up when the host sets *abortFlag, when
// another thread already failed, or after c.timeoutNs. Every 1024 polls it
// reads the GPU's clock; the abort and status words live in host memory
// (a PCIe round trip each, and every spinning thread of every block polls),
// so it reads them only once the wait has lasted GCCL_WAIT_QUIET_NS: short
// waits, the common case, never leave the GPU.
#define GCCL_WAIT_QUIET_NS 100000ull
struct Waiter {
	const gcclComm &c;
	unsigned long long start;
	unsigned int spins;
	__device__ __forceinline__ explicit Waiter(const gcclComm &cc) : c(cc), start(0), spins(0) {}
	__device__ __forceinline__ bool keepGoing() {
		if ((++spins & 1023) != 0) return true;
		const unsigned long long now = globalTimer();
		if (start == 0) {
			start = now;
			return true;
		}
		const unsigned long long waited = now - start;
		if (waited < GCCL_WAIT_QUIET_NS) return true;
		if (c.abortFlag != nullptr && *c.abortFlag != 0) {
			fail(c, GCCL_STATUS_ABORTED);
			return false;
		}
		if (c.status != nullptr && *(volatile uint32_t *)c.status != GCCL_STATUS_OK) return false;
		if (c.timeoutNs != 0 && waited > c.timeoutNs) {
			fail(c, GCCL_STATUS_TIMEOUT);
			return false;
		}
		return true;
	}
};

// barrier synchronises this block (channel) with the same channel on every
// other rank (peer < 0) or on one peer. It orders all of the block's earlier
// stores before the peers' later loads, and the reverse. It returns false,
// uniformly over the block, when a wait gave up.
//
// Each (source rank, channel) has its own flag word on the destination
// rank; the value written is the channel's barrier count, which every rank
// advances identically, so flags only grow and a late reader of a newer
// value still passes.
//
// With check (the first barrier of a collective kernel) each rank also
// stores c.regKey into its key slot on every peer before the flag, and
// after the wait compares the peer's key with its own: ranks that disagree
// on buffer registration fail with GCCL_STATUS_BADUSAGE before touching
// peer buffers. A peer cannot overwrite the slot before this rank reads
// it: its next kernel starts only after this kernel's later barrier.
__device__ __forceinline__ bool barrier(const gcclComm &c, int flagBase, int row, int peer, bool check) {
	__shared__ uint32_t value;
	__shared__ int ok;
	__syncthreads();
	if (threadIdx.x == 0) {
		uint32_t *ctr = c.counters + row * GCCL_MAX_CHANNELS + blockIdx.x;
		value = *ctr + 1;
		*ctr = value;
		ok = 1;
	}
	__syncthreads();
	const int t = threadIdx.x;
	if (t < c.nranks && t != c.rank && (peer < 0 || t == peer)) {
		if (check) *(volatile uint32_t *)(c.flags[t] + GCCL_KEY_SLOTS + c.rank * GCCL_MAX_CHANNELS + blockIdx.x) = c.regKey;
		__threadfence_system(); // the block's stores, ordered by __syncthreads, before the flag
		stReleaseSys(c.flags[t] + flagBase + c.rank * GCCL_MAX_CHANNELS + blockIdx.x, value);
		const uint32_t *mine = c.flags[c.rank] + flagBase + t * GCCL_MAX_CHANNELS + blockIdx.x;
		Waiter w(c);
		bool arrived = true;
		while ((int32_t)(ldAcquireSys(mine) - value) < 0) {
			if (!w.keepGoing()) {
				ok = 0;
				arrived = false;
				break;
			}
		}
		if (check && arrived &&
		    ldAcquireSys(c.flags[c.rank] + GCCL_KEY_SLOTS + t * GCCL_MAX_CHANNELS + blockIdx.x) != c.regKey) {
			fail(c, GCCL_STATUS_BADUSAGE);
			ok = 0;
		}
	}
	__syncthreads();
	return ok != 0;
}

__device__ __forceinline__ bool collBarrier(const gcclComm &c) {
	return barrier(c, GCCL_COLL_FLAGS, GCCL_COLL_ROW, -1, false);
}

// collStart is the first barrier of a collective kernel: it also checks
// that every rank launched with the same registration key.
__device__ __forceinline__ bool collStart(const gcclComm &c) {
	return barrier(c, GCCL_COLL_FLAGS, GCCL_COLL_ROW, -1, true);
}

__device__ __forceinline__ bool p2pBarrier(const gcclComm &c, int peer) {
	return barrier(c, GCCL_P2P_FLAGS, peer, peer, false);
}

// ---- LL lines: 8 bytes = 4 bytes of data + 4 bytes of flag ----------------

// llStore writes two lines (8 data bytes) with one 16-byte volatile store.
__device__ __forceinline__ void llStore(char *p, uint2 d, uint32_t flag) {
	asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(d.x), "r"(flag), "r"(d.y), "r"(flag)
		     : "memory");
}

// llLoad waits until both lines at p carry flag and returns their data.
__device__ __forceinline__ bool llLoad(const char *p, uint32_t flag, uint2 &out, Waiter &w) {
	uint32_t d0, f0, d1, f1;
	do {
		asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
			     : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
			     : "l"(p)
			     : "memory");
		if (f0 == flag && f1 == flag) {
			out = make_uint2(d0, d1);
			return true;
		}
	} while (w.keepGoing());
	return false;
}

// llEpoch is this launch's LL flag value: one more than the last launch's.
// Every block reads it at its start; the last block to finish (llFinish)
// stores it, so all blocks of a launch agree and the next launch sees it.
__device__ __forceinline__ uint32_t llEpoch(const gcclComm &c) {
	__shared__ uint32_t e;
	if (threadIdx.x == 0) e = *(volatile uint32_t *)(c.counters + GCCL_LL_ROW * GCCL_MAX_CHANNELS) + 1;
	__syncthreads();
	return e;
}

__device__ __forceinline__ void llFinish(const gcclComm &c, uint32_t epoch) {
	__syncthreads();
	if (threadIdx.x == 0) {
		uint32_t *row = c.counters + GCCL_LL_ROW * GCCL_MAX_CHANNELS;
		__threadfence();
		if (atomicAdd(&row[1], 1u) == gridDim.x - 1) {
			row[1] = 0;
			*(volatile uint32_t *)&row[0] = epoch == 0xffffffffu ? 1u : epoch;
		}
	}
}
