// Ring kernels for GPU communicators whose ranks cannot all map each
// other's memory (a peer on another host): every collective is one kernel
// that talks to its ring neighbours through FIFOs in pinned host memory,
// which the communicator's proxy goroutine moves over the network
// (docs/gpunet.md is the contract: FIFO layout, counters, ring steps).
//
// This is its own module (kernels.RingFatbin): it shares common.cuh and
// sync.cuh with the peer-memory kernels but not their instantiations.
#include "../instantiate.cuh"
#include "../reduce.cuh"
#include "../sync.cuh"

#define GCCL_RING_MAX_CHANNELS 16
#define GCCL_NET_P2P_MAX_PEERS 8
#define GCCL_NET_P2P_MAX_PIECES 64
#define GCCL_RING_GATHER_MAX_RANKS 9 // 1 + the FIFO's slots: a rank keeps n-1 received slots
#define GCCL_RING_TRAILER 16          // the key trailer of a ring collective's slot (ringWire)

// gcclFifo is one direction of one connection, as the GPU sees it
// (device-mapped pointers into the FIFO's pinned host memory).
struct gcclFifo {
	char *slots;               // NSlots slots of slotBytes
	unsigned long long *tail;  // slots posted (send: GPU writes; recv: proxy writes)
	unsigned long long *head;  // slots freed (send: proxy writes; recv: GPU writes)
	unsigned int *sizes;       // bytes per slot
};

// gcclRingConn is a channel's connections: to the next rank, from the previous.
struct gcclRingConn {
	gcclFifo send;
	gcclFifo recv;
};

// gcclRingDesc is a ring collective, passed by value after the gcclComm
// (whose in/out/scratch/flags are unused: the ring may have more ranks
// than they address; its regKey is the operation's key, which every slot
// of a ring collective carries: ringWire). The ring is ranks[0] -> ranks[1] -> ... ->
// ranks[nranks-1] -> ranks[0]; the steps go by ring position, and the
// per-rank blocks of reduce-scatter and all-gather by rank (ranks[q] is
// the block that position q owns).
struct gcclRingDesc {
	char *in;
	char *out;
	unsigned long long count; // elements (all-reduce, reduce), per-rank elements (reduce-scatter), bytes (broadcast), per-rank bytes (all-gather)
	unsigned long long slotBytes;
	int nslots;
	int nranks;
	int pos;          // this rank's ring position
	int root;         // the root's ring position (broadcast, reduce)
	const int *ranks; // device memory: ranks[q] is the rank at ring position q
	gcclRingConn ch[GCCL_RING_MAX_CHANNELS];
};

// gcclNetPiece is one Send or Recv buffer of a point-to-point launch.
struct gcclNetPiece {
	char *ptr;
	unsigned long long bytes;
};

// gcclNetPeer is one peer of a point-to-point launch: its connections, and
// its pieces (pieces[send, send+nsend) are one byte stream of sendBytes,
// likewise the receives).
struct gcclNetPeer {
	gcclFifo send;
	gcclFifo recv;
	unsigned long long sendBytes;
	unsigned long long recvBytes;
	int sendFirst;
	int nsend;
	int recvFirst;
	int nrecv;
};

struct gcclNetP2PDesc {
	unsigned long long slotBytes;
	int nslots;
	int npeers;
	gcclNetPeer peers[GCCL_NET_P2P_MAX_PEERS];
	gcclNetPiece pieces[GCCL_NET_P2P_MAX_PIECES];
};

// ---- counters and slots in host memory -----------------------------------

__device__ __forceinline__ unsigned long long ldAcquireSys64(const unsigned long long *p) {
	unsigned long long v;
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

__device__ __forceinline__ void stRelaxedSys64(unsigned long long *p, unsigned long long v) {
	asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void fenceAcqRelSys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

// Slots are read with volatile loads: the CPU (or the NIC) wrote them, and
// a cached copy of an earlier use of the slot must never be seen.
__device__ __forceinline__ uint4 ldSlot16(const char *p) {
	uint4 v;
	asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p)
		     : "memory");
	return v;
}

// Fifo is one block's position in one FIFO; thread 0 owns the waits, the
// block shares the slot it got.
struct Fifo {
	gcclFifo f;
	unsigned long long pos;   // next sequence number this block posts (send) or consumes (recv)
	unsigned long long other; // the last value seen of the other side's counter
};

// The block's shared state: the slots it is working on and whether a wait
// gave up.
struct RingShared {
	char *sendSlot;
	char *recvSlot;
	int ok;
	unsigned long long recvPos, recvOther; // the receiving FIFO as Ring's warp 1 opened it
};

__device__ __forceinline__ void fifoOpenSend(Fifo &s, const gcclFifo &f) {
	s.f = f;
	s.pos = *(volatile unsigned long long *)f.tail;
	s.other = ldAcquireSys64(f.head);
}

__device__ __forceinline__ void fifoOpenRecv(Fifo &r, const gcclFifo &f) {
	r.f = f;
	r.pos = *(volatile unsigned long long *)f.head;
	r.other = ldAcquireSys64(f.tail);
}

// waitSlots waits (thread 0) for a free send slot (s non-null) and a full
// receive slot (r non-null) and shares them; false when a wait gave up.
// Uniform over the block. The received slot's size is not read here:
// recvSize issues that load once the block has the slot, so that it
// overlaps the block's reads of the slot instead of adding a round trip
// over PCIe before them, and postSlots checks it before anything is
// published (a rank never forwards what came with the wrong size).
__device__ __forceinline__ bool waitSlots(const gcclComm &c, RingShared &sh, Fifo *s, Fifo *r, int nslots,
					  size_t slotBytes) {
	if (threadIdx.x == 0) {
		sh.ok = 1;
		Waiter w(c);
		if (s != nullptr) {
			while (s->pos - s->other >= (unsigned long long)nslots) {
				s->other = ldAcquireSys64(s->f.head);
				if (s->pos - s->other >= (unsigned long long)nslots && !w.keepGoing()) {
					sh.ok = 0;
					break;
				}
			}
			sh.sendSlot = s->f.slots + (size_t)(s->pos % (unsigned long long)nslots) * slotBytes;
		}
		if (sh.ok && r != nullptr) {
			while (r->other <= r->pos) {
				r->other = ldAcquireSys64(r->f.tail);
				if (r->other <= r->pos && !w.keepGoing()) {
					sh.ok = 0;
					break;
				}
			}
			if (sh.ok) sh.recvSlot = r->f.slots + (size_t)(r->pos % (unsigned long long)nslots) * slotBytes;
		}
	}
	__syncthreads();
	return sh.ok != 0;
}

// recvSize loads (thread 0; 0 elsewhere) the size of the slot waitSlots got
// for r, which the tail it acquired orders after the proxy's store. Call it
// after waitSlots and before the block reads the slot; postSlots takes
// the verdict.
__device__ __forceinline__ unsigned int recvSize(const Fifo &r, int nslots) {
	if (threadIdx.x != 0) return 0;
	return *(volatile unsigned int *)(r.f.sizes + (size_t)(r.pos % (unsigned long long)nslots));
}

// A ring collective's slot carries, after its data, a trailer: the
// launch's operation key (c.regKey: engine.Op.Key of the operation and its
// plan) at the first 16-byte boundary past the data, so that a slot of b
// data bytes travels as ringWire(b) bytes and holds at most
// ringData(slotBytes) of them. The receiver checks both the size and the
// key, so ranks that launched different operations fail (BADUSAGE) even
// where their slots have the same sizes (a count that rounds to the same
// chunks, another collective, another root). The point-to-point kernel's
// slots have no trailer: each connection carries one pair's byte streams,
// checked by their sizes.
__device__ __forceinline__ size_t ringPad(size_t b) { return (b + 15) / 16 * 16; }
__device__ __forceinline__ size_t ringWire(size_t b) { return ringPad(b) + GCCL_RING_TRAILER; }
__device__ __forceinline__ size_t ringData(size_t slotBytes) { return slotBytes - GCCL_RING_TRAILER; }

// recvKey loads (thread 0; 0 elsewhere) the key trailer of a received slot
// of b data bytes, with the block's reads of the slot (as recvSize).
__device__ __forceinline__ unsigned int recvKey(const char *slot, size_t b) {
	if (threadIdx.x != 0) return 0;
	return *(const volatile unsigned int *)(slot + ringPad(b));
}

// slotOK is thread 0's verdict on a received slot of b data bytes whose
// size (recvSize) and key (recvKey) it loaded: both what this launch sent.
__device__ __forceinline__ bool slotOK(const gcclComm &c, unsigned int got, unsigned int key, size_t b) {
	return got == ringWire(b) && key == c.regKey;
}

// putKey (thread 0) writes this launch's key trailer into a send slot of b
// data bytes; postSlots' fence orders it before tail.
__device__ __forceinline__ void putKey(const gcclComm &c, char *slot, size_t b) {
	if (threadIdx.x == 0)
		asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(slot + ringPad(b)), "r"(c.regKey), "r"(0u), "r"(0u),
			     "r"(0u)
			     : "memory");
}

// postSlots takes thread 0's verdict on what it received (good: the size
// from recvSize, and a ring collective's key, were right; true when
// nothing was received), then publishes the send slot with bytes (s
// non-null) and frees the receive slot, after every thread's stores and
// loads; false (uniform) when the verdict was no, and then it fails the
// launch with BADUSAGE and publishes nothing. As
// NCCL posts to its proxy: the block's slot stores, ordered by
// __syncthreads, then thread 0's size store, one system-scope fence, and
// a relaxed store of tail (the fence is the release, cumulative over what
// the barrier ordered before it). Freeing a slot needs no fence: every
// thread's loads of it returned before the barrier (their values were
// used).
__device__ __forceinline__ bool postSlots(const gcclComm &c, RingShared &sh, Fifo *s, Fifo *r, int nslots, size_t bytes,
					  bool good) {
	__syncthreads();
	if (threadIdx.x == 0) {
		sh.ok = good;
		if (!good) fail(c, GCCL_STATUS_BADUSAGE);
		if (sh.ok) {
			if (s != nullptr) {
				*(volatile unsigned int *)(s->f.sizes + (size_t)(s->pos % (unsigned long long)nslots)) = (unsigned int)bytes;
				fenceAcqRelSys();
				stRelaxedSys64(s->f.tail, ++s->pos);
			}
			if (r != nullptr) stRelaxedSys64(r->f.head, ++r->pos);
		}
	}
	__syncthreads();
	return sh.ok != 0;
}

// ---- data movement --------------------------------------------------------

// Bits<N>::U is the unsigned integer of N bytes.
template <int N> struct Bits;
template <> struct Bits<1> {
	typedef unsigned char U;
};
template <> struct Bits<2> {
	typedef unsigned short U;
};
template <> struct Bits<4> {
	typedef unsigned int U;
};
template <> struct Bits<8> {
	typedef unsigned long long U;
};

// ldElem loads the T at p, which another agent may have written
// (volatile), and stElem stores v at p: one access of T's size where p is
// aligned to it (elements of T arrays always are), bytes otherwise. They
// move the value through an integer, never through the bytes of a T object.
// The element-wise tail (fewer elements than a vector) used to read its
// input with a plain T load and store byte by byte through the T's object
// representation: on the GPU (nvcc 13, sm_90) the value ring_reduce's first
// rank sent lost its low byte for 16-bit types (the same code in
// ring_allreduce was right), so such reduces were wrong.
template <typename T> __device__ __forceinline__ T ldElem(const char *p) {
	typedef typename Bits<sizeof(T)>::U U;
	U u;
	if ((reinterpret_cast<uintptr_t>(p) & (sizeof(T) - 1)) == 0) {
		u = *reinterpret_cast<const volatile U *>(p);
	} else {
		u = 0;
#pragma unroll
		for (int i = 0; i < (int)sizeof(T); i++) u |= (U)((U)(*(const volatile unsigned char *)(p + i)) << (8 * i));
	}
	T v;
	__builtin_memcpy(&v, &u, sizeof(T));
	return v;
}

template <typename T> __device__ __forceinline__ void stElem(char *p, T v) {
	typedef typename Bits<sizeof(T)>::U U;
	U u;
	__builtin_memcpy(&u, &v, sizeof(T));
	if ((reinterpret_cast<uintptr_t>(p) & (sizeof(T) - 1)) == 0) {
		*reinterpret_cast<U *>(p) = u;
	} else {
#pragma unroll
		for (int i = 0; i < (int)sizeof(T); i++) p[i] = (unsigned char)(u >> (8 * i));
	}
}

// RingMove computes d = f(a, b) for n elements and stores it to d0 and d1
// (either may be null): a is this rank's input (may be null), b a received
// slot (may be null). With both, a (scaled: premulsum) is reduced with b;
// with one, it is copied (a scaled). fin applies the operator's post
// (avg's division).
template <typename T, int OP> struct RingMove {
	Red<T, OP> red;
	typedef typename Num<T>::Acc Acc;
	__device__ __forceinline__ T one(const T *a, const T *b, bool fin) const {
		Acc acc;
		if (a != nullptr && b != nullptr) {
			const T bv = ldElem<T>(reinterpret_cast<const char *>(b));
			acc = red.comb(red.pre(red.scaled(ldElem<T>(reinterpret_cast<const char *>(a)))), red.pre(bv));
		} else if (a != nullptr) {
			acc = red.pre(red.scaled(ldElem<T>(reinterpret_cast<const char *>(a))));
		} else {
			acc = red.pre(ldElem<T>(reinterpret_cast<const char *>(b)));
		}
		return fin ? red.post(acc) : Num<T>::from(acc);
	}
	__device__ void run(const char *a, const char *b, char *d0, char *d1, size_t n, bool fin) const {
		const bool vec = (a == nullptr || aligned16(a)) && (b == nullptr || aligned16(b)) &&
				 (d0 == nullptr || aligned16(d0)) && (d1 == nullptr || aligned16(d1));
		constexpr int E = 16 / sizeof(T);
		size_t done = 0;
		if (vec) {
			const size_t nv = n / E;
			for (size_t v = threadIdx.x; v < nv; v += blockDim.x) {
				union {
					uint4 u;
					T e[E];
				} x, y, z;
				if (a != nullptr) x.u = __ldcg(reinterpret_cast<const uint4 *>(a) + v);
				if (b != nullptr) y.u = ldSlot16(b + v * 16);
#pragma unroll
				for (int k = 0; k < E; k++) {
					Acc acc;
					if (a != nullptr && b != nullptr) acc = red.comb(red.pre(red.scaled(x.e[k])), red.pre(y.e[k]));
					else if (a != nullptr) acc = red.pre(red.scaled(x.e[k]));
					else acc = red.pre(y.e[k]);
					z.e[k] = fin ? red.post(acc) : Num<T>::from(acc);
				}
				if (d0 != nullptr) *(reinterpret_cast<uint4 *>(d0) + v) = z.u;
				if (d1 != nullptr) *(reinterpret_cast<uint4 *>(d1) + v) = z.u;
			}
			done = nv * E;
		}
		for (size_t i = done + threadIdx.x; i < n; i += blockDim.x) {
			const T v = one(a != nullptr ? reinterpret_cast<const T *>(a) + i : nullptr,
					b != nullptr ? reinterpret_cast<const T *>(b) + i : nullptr, fin);
			if (d0 != nullptr) stElem(d0 + i * sizeof(T), v);
			if (d1 != nullptr) stElem(d1 + i * sizeof(T), v);
		}
	}
};

// moveBytes copies n bytes from src (a slot when fromSlot, else device
// memory) to d0 and d1 (either may be null).
__device__ __forceinline__ void moveBytes(const char *src, bool fromSlot, char *d0, char *d1, size_t n) {
	size_t done = 0;
	if (aligned16(src) && (d0 == nullptr || aligned16(d0)) && (d1 == nullptr || aligned16(d1))) {
		const size_t nv = n / 16;
		for (size_t v = threadIdx.x; v < nv; v += blockDim.x) {
			const uint4 x = fromSlot ? ldSlot16(src + v * 16) : __ldcg(reinterpret_cast<const uint4 *>(src) + v);
			if (d0 != nullptr) *(reinterpret_cast<uint4 *>(d0) + v) = x;
			if (d1 != nullptr) *(reinterpret_cast<uint4 *>(d1) + v) = x;
		}
		done = nv * 16;
	}
	for (size_t i = done + threadIdx.x; i < n; i += blockDim.x) {
		const char x = *(const volatile char *)(src + i);
		if (d0 != nullptr) d0[i] = x;
		if (d1 != nullptr) d1[i] = x;
	}
}

// ---- ring steps -----------------------------------------------------------

// Ring is one block's channel of a ring collective.
struct Ring {
	const gcclComm &c;
	const gcclRingDesc &d;
	RingShared &sh;
	Fifo s, r;
	// Ring opens both FIFOs of the block's channel at once: each open is
	// two reads of host memory (a PCIe round trip each), so thread 0 opens
	// the sending one while thread 32 (another warp) opens the receiving
	// one and hands it over through shared memory. Every thread of the
	// block constructs it (it synchronises the block).
	__device__ Ring(const gcclComm &cc, const gcclRingDesc &dd, RingShared &shh) : c(cc), d(dd), sh(shh) {
		if (threadIdx.x == 0) fifoOpenSend(s, d.ch[blockIdx.x].send);
		if (threadIdx.x == 32) {
			fifoOpenRecv(r, d.ch[blockIdx.x].recv);
			sh.recvPos = r.pos;
			sh.recvOther = r.other;
		}
		__syncthreads();
		if (threadIdx.x == 0) {
			r.f = d.ch[blockIdx.x].recv;
			r.pos = sh.recvPos;
			r.other = sh.recvOther;
		}
	}
	// step runs one ring step of bytes: send (a slot from f), receive (a
	// slot into f), or both. f(sendSlot, recvSlot) moves the data.
	template <typename F> __device__ __forceinline__ bool step(bool send, bool recv, size_t bytes, const F &f) {
		if (!waitSlots(c, sh, send ? &s : nullptr, recv ? &r : nullptr, d.nslots, d.slotBytes)) return false;
		const size_t wire = ringWire(bytes);
		const unsigned int got = recv ? recvSize(r, d.nslots) : 0;
		const unsigned int key = recv ? recvKey(sh.recvSlot, bytes) : 0;
		f(send ? sh.sendSlot : nullptr, recv ? sh.recvSlot : nullptr);
		if (send) putKey(c, sh.sendSlot, bytes);
		return postSlots(c, sh, send ? &s : nullptr, recv ? &r : nullptr, d.nslots, wire,
				 !recv || slotOK(c, got, key, bytes));
	}
};

__device__ __forceinline__ int ringMod(long long x, int n) { return (int)(((x % n) + n) % n); }

// chunkOf is chunk k of the round [rb, re) cut into n chunks of ce
// elements (16-byte multiples), as [cb, cend).
template <typename T>
__device__ __forceinline__ void chunkOf(size_t rb, size_t re, size_t ce, int k, size_t &cb, size_t &cend) {
	cb = smin(re, rb + ce * (size_t)k);
	cend = smin(re, cb + ce);
}

// roundChunk is the chunk length of a round of len elements over n ranks:
// len/n rounded up to 16 bytes, at most the slot.
template <typename T> __device__ __forceinline__ size_t roundChunk(size_t len, int n, size_t slotElems) {
	const size_t align = 16 / sizeof(T);
	size_t ce = (len + n - 1) / n;
	ce = (ce + align - 1) / align * align;
	return ce < slotElems ? ce : slotElems;
}

template <typename T, int OP>
__device__ __forceinline__ void ring_allreduce(const gcclComm &c, const gcclRingDesc &d, const Red<T, OP> &red) {
	__shared__ RingShared sh;
	Ring ring(c, d, sh);
	const RingMove<T, OP> mv{red};
	const int n = d.nranks, p = d.pos;
	const size_t slotElems = ringData(d.slotBytes) / sizeof(T);
	size_t b, e;
	channelSlice<T>(d.count, b, e);
	const T *in = reinterpret_cast<const T *>(d.in);
	T *out = reinterpret_cast<T *>(d.out);
	for (size_t rb = b; rb < e;) {
		const size_t ce = roundChunk<T>(e - rb, n, slotElems);
		const size_t re = smin(e, rb + ce * (size_t)n);
		size_t cb, cend;
		chunkOf<T>(rb, re, ce, p, cb, cend);
		if (!ring.step(true, false, (cend - cb) * sizeof(T), [&](char *snd, char *) {
			    mv.run(reinterpret_cast<const char *>(in + cb), nullptr, snd, nullptr, cend - cb, false);
		    }))
			return;
		for (int j = 1; j < n; j++) {
			chunkOf<T>(rb, re, ce, ringMod((long long)p - j, n), cb, cend);
			const bool last = j == n - 1;
			if (!ring.step(true, true, (cend - cb) * sizeof(T), [&](char *snd, char *rcv) {
				    mv.run(reinterpret_cast<const char *>(in + cb), rcv, snd,
					   last ? reinterpret_cast<char *>(out + cb) : nullptr, cend - cb, last);
			    }))
				return;
		}
		for (int j = 1; j < n; j++) {
			chunkOf<T>(rb, re, ce, ringMod((long long)p + 1 - j, n), cb, cend);
			const bool fwd = j < n - 1;
			if (!ring.step(fwd, true, (cend - cb) * sizeof(T), [&](char *snd, char *rcv) {
				    moveBytes(rcv, true, reinterpret_cast<char *>(out + cb), snd, (cend - cb) * sizeof(T));
			    }))
				return;
		}
		rb = re;
	}
}

// gatherReduce folds every rank's input in rank order, elementwise, into
// out: src[r] is rank r's input in a received slot, except this rank's
// (me), which is read from in and scaled (premulsum) and rounded to T as
// its peers received it. Each step rounds to T as a ring hop does, and
// post (avg's division) comes once, at the last rank: every rank computes
// bit-identical results.
template <typename T, int OP>
__device__ __forceinline__ void gatherReduce(const Red<T, OP> &red, const char *const *src, int n, int me, const char *in,
					     char *out, size_t count) {
	typedef typename Num<T>::Acc Acc;
	constexpr int E = 16 / sizeof(T);
	bool vec = aligned16(in) && aligned16(out);
	for (int r = 0; r < n; r++) vec = vec && (r == me || aligned16(src[r]));
	const size_t nv = vec ? count / E : 0;
	for (size_t v = threadIdx.x; v < nv; v += blockDim.x) {
		union {
			uint4 u;
			T e[E];
		} x, acc;
		for (int r = 0; r < n; r++) {
			if (r == me) {
				x.u = __ldcg(reinterpret_cast<const uint4 *>(in) + v);
#pragma unroll
				for (int k = 0; k < E; k++) x.e[k] = red.scaled(x.e[k]);
			} else {
				x.u = ldSlot16(src[r] + v * 16);
			}
			if (r == 0) {
				acc.u = x.u;
				continue;
			}
#pragma unroll
			for (int k = 0; k < E; k++) {
				const Acc a = red.comb(red.pre(acc.e[k]), red.pre(x.e[k]));
				acc.e[k] = r == n - 1 ? red.post(a) : Num<T>::from(a);
			}
		}
		*(reinterpret_cast<uint4 *>(out) + v) = acc.u;
	}
	for (size_t i = nv * E + threadIdx.x; i < count; i += blockDim.x) {
		const size_t off = i * sizeof(T);
		const auto get = [&](int r) { return r == me ? red.scaled(ldElem<T>(in + off)) : ldElem<T>(src[r] + off); };
		T acc = get(0);
		for (int r = 1; r < n; r++) {
			const Acc a = red.comb(red.pre(acc), red.pre(get(r)));
			acc = r == n - 1 ? red.post(a) : Num<T>::from(a);
		}
		stElem(out + off, acc);
	}
}

// ring_allreduce_gather is the small all-reduce in n-1 ring steps instead
// of 2(n-1) (docs/gpunet.md): every rank's whole input (scaled:
// premulsum) travels the ring in one slot; each rank forwards what it
// receives and keeps the n-1 received slots, then reduces every rank's
// input in rank order into out and frees them. One channel, the buffer in
// one slot, n-1 <= nslots (gpuplan.Ring.Gather chooses it only then; a
// launch that breaks that fails with BADARGS).
template <typename T, int OP>
__device__ __forceinline__ void ring_allreduce_gather(const gcclComm &c, const gcclRingDesc &d, const Red<T, OP> &red) {
	__shared__ RingShared sh;
	__shared__ const char *src[GCCL_RING_GATHER_MAX_RANKS];
	const int n = d.nranks, p = d.pos;
	const size_t count = d.count, bytes = count * sizeof(T);
	if (gridDim.x != 1 || n < 2 || n > GCCL_RING_GATHER_MAX_RANKS || n - 1 > d.nslots || ringWire(bytes) > d.slotBytes) {
		if (threadIdx.x == 0) fail(c, GCCL_STATUS_BADARGS);
		return;
	}
	Ring ring(c, d, sh);
	const RingMove<T, OP> mv{red};
	if (!ring.step(true, false, bytes, [&](char *snd, char *) { mv.run(d.in, nullptr, snd, nullptr, count, false); }))
		return;
	const size_t wire = ringWire(bytes);
	// The last received slot's size and key (thread 0), compared only after
	// the reduction: comparing them here would wait for the loads (a PCIe
	// round trip) while the block waits for thread 0.
	unsigned int lastGot = 0, lastKey = 0;
	for (int j = 1; j < n; j++) {
		const bool fwd = j < n - 1;
		if (!waitSlots(c, sh, fwd ? &ring.s : nullptr, &ring.r, d.nslots, d.slotBytes)) return;
		const unsigned int got = recvSize(ring.r, d.nslots);
		const unsigned int key = recvKey(sh.recvSlot, bytes);
		if (threadIdx.x == 0) {
			src[d.ranks[ringMod((long long)p - j, n)]] = sh.recvSlot;
			ring.r.pos++; // kept: freed after the reduction
		}
		if (fwd) {
			moveBytes(sh.recvSlot, true, sh.sendSlot, nullptr, bytes);
			putKey(c, sh.sendSlot, bytes);
			if (!postSlots(c, sh, &ring.s, nullptr, d.nslots, wire, slotOK(c, got, key, bytes))) return;
		} else {
			lastGot = got;
			lastKey = key;
		}
	}
	__syncthreads();
	gatherReduce<T, OP>(red, src, n, d.ranks[p], d.in, d.out, count);
	__syncthreads();
	if (threadIdx.x == 0) {
		if (slotOK(c, lastGot, lastKey, bytes)) stRelaxedSys64(ring.r.f.head, ring.r.pos);
		else fail(c, GCCL_STATUS_BADUSAGE);
	}
}

template <typename T, int OP>
__device__ __forceinline__ void ring_reducescatter(const gcclComm &c, const gcclRingDesc &d, const Red<T, OP> &red) {
	__shared__ RingShared sh;
	Ring ring(c, d, sh);
	const RingMove<T, OP> mv{red};
	const int n = d.nranks, p = d.pos;
	const size_t slotElems = ringData(d.slotBytes) / sizeof(T);
	const size_t count = d.count;
	size_t b, e;
	channelSlice<T>(count, b, e);
	const T *in = reinterpret_cast<const T *>(d.in);
	T *out = reinterpret_cast<T *>(d.out);
	for (size_t rb = b; rb < e;) {
		const size_t re = smin(e, rb + slotElems);
		const size_t len = re - rb;
		const int first = d.ranks[ringMod((long long)p - 1, n)];
		if (!ring.step(true, false, len * sizeof(T), [&](char *snd, char *) {
			    mv.run(reinterpret_cast<const char *>(in + (size_t)first * count + rb), nullptr, snd, nullptr, len, false);
		    }))
			return;
		for (int j = 1; j < n; j++) {
			const int blk = d.ranks[ringMod((long long)p - 1 - j, n)];
			const bool last = j == n - 1;
			if (!ring.step(!last, true, len * sizeof(T), [&](char *snd, char *rcv) {
				    mv.run(reinterpret_cast<const char *>(in + (size_t)blk * count + rb), rcv,
					   last ? reinterpret_cast<char *>(out + rb) : snd, nullptr, len, last);
			    }))
				return;
		}
		rb = re;
	}
}

template <typename T, int OP>
__device__ __forceinline__ void ring_reduce(const gcclComm &c, const gcclRingDesc &d, const Red<T, OP> &red) {
	__shared__ RingShared sh;
	Ring ring(c, d, sh);
	const RingMove<T, OP> mv{red};
	const int n = d.nranks;
	const int q = ringMod((long long)d.pos - d.root - 1, n); // the root is q = n-1
	const size_t slotElems = ringData(d.slotBytes) / sizeof(T);
	size_t b, e;
	channelSlice<T>(d.count, b, e);
	const T *in = reinterpret_cast<const T *>(d.in);
	T *out = reinterpret_cast<T *>(d.out);
	for (size_t pb = b; pb < e;) {
		const size_t pe = smin(e, pb + slotElems);
		const size_t len = pe - pb;
		const char *a = reinterpret_cast<const char *>(in + pb);
		bool ok;
		if (q == 0) {
			ok = ring.step(true, false, len * sizeof(T), [&](char *snd, char *) { mv.run(a, nullptr, snd, nullptr, len, false); });
		} else if (q < n - 1) {
			ok = ring.step(true, true, len * sizeof(T), [&](char *snd, char *rcv) { mv.run(a, rcv, snd, nullptr, len, false); });
		} else {
			ok = ring.step(false, true, len * sizeof(T), [&](char *, char *rcv) {
				mv.run(a, rcv, reinterpret_cast<char *>(out + pb), nullptr, len, true);
			});
		}
		if (!ok) return;
		pb = pe;
	}
}

// ringAllGather: d.count bytes per rank.
__device__ __forceinline__ void ringAllGather(const gcclComm &c, const gcclRingDesc &d) {
	__shared__ RingShared sh;
	Ring ring(c, d, sh);
	const int n = d.nranks, p = d.pos;
	const size_t nbytes = d.count;
	size_t b, e;
	byteSlice(nbytes, b, e);
	for (size_t rb = b; rb < e;) {
		const size_t re = smin(e, rb + ringData(d.slotBytes));
		const size_t len = re - rb;
		char *mine = d.out + (size_t)d.ranks[p] * nbytes + rb;
		const char *src = d.in + rb;
		if (!ring.step(true, false, len, [&](char *snd, char *) {
			    moveBytes(src, false, snd, mine == src ? nullptr : mine, len);
		    }))
			return;
		for (int j = 1; j < n; j++) {
			const int blk = d.ranks[ringMod((long long)p - j, n)];
			const bool fwd = j < n - 1;
			if (!ring.step(fwd, true, len, [&](char *snd, char *rcv) {
				    moveBytes(rcv, true, d.out + (size_t)blk * nbytes + rb, snd, len);
			    }))
				return;
		}
		rb = re;
	}
}

// ringBroadcast: d.count bytes from the root's in to every out.
__device__ __forceinline__ void ringBroadcast(const gcclComm &c, const gcclRingDesc &d) {
	__shared__ RingShared sh;
	Ring ring(c, d, sh);
	const int n = d.nranks;
	const int q = ringMod((long long)d.pos - d.root, n);
	size_t b, e;
	byteSlice(d.count, b, e);
	for (size_t pb = b; pb < e;) {
		const size_t pe = smin(e, pb + ringData(d.slotBytes));
		const size_t len = pe - pb;
		char *dst = d.out + pb;
		bool ok;
		if (q == 0) {
			const char *src = d.in + pb;
			ok = ring.step(true, false, len, [&](char *snd, char *) { moveBytes(src, false, snd, dst == src ? nullptr : dst, len); });
		} else {
			ok = ring.step(q < n - 1, true, len, [&](char *snd, char *rcv) { moveBytes(rcv, true, dst, snd, len); });
		}
		if (!ok) return;
		pb = pe;
	}
}

// The entry points take their gcclComm and descriptor __grid_constant__:
// device code reads them in place, in the kernel's parameter space.
// Without it nvcc gave every thread a 1.5 KB stack frame and copied the
// whole descriptor into it at every launch (ring-ptxas.txt), to index
// d.ch[blockIdx.x] and pass d by reference.
#define GCCL_RING_RED_ENTRY(K, T, tn, OP, on) \
	extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_##K##_##tn##_##on( \
		const __grid_constant__ gcclComm c, const __grid_constant__ gcclRingDesc d, unsigned long long scalarBits, const void *scalarPtr) { \
		K<T, OP>(c, d, Red<T, OP>(scalarBits, scalarPtr, d.nranks)); \
	}
#define GCCL_RING_RED_TYPE(K, T, tn) GCCL_OPS(GCCL_RING_RED_ENTRY, K, T, tn)
#define GCCL_RING_INSTANTIATE_RED(K) GCCL_TYPES(GCCL_RING_RED_TYPE, K)

GCCL_RING_INSTANTIATE_RED(ring_allreduce)
GCCL_RING_INSTANTIATE_RED(ring_reducescatter)
GCCL_RING_INSTANTIATE_RED(ring_reduce)
GCCL_RING_INSTANTIATE_RED(ring_allreduce_gather)

extern "C" __global__ void __launch_bounds__(GCCL_THREADS)
	gccl_ring_allgather(const __grid_constant__ gcclComm c, const __grid_constant__ gcclRingDesc d) {
	ringAllGather(c, d);
}

extern "C" __global__ void __launch_bounds__(GCCL_THREADS)
	gccl_ring_broadcast(const __grid_constant__ gcclComm c, const __grid_constant__ gcclRingDesc d) {
	ringBroadcast(c, d);
}

// netStream moves bytes [b, e) of the byte stream that pieces [first,
// first+n) make, to (gather: from the pieces into buf) or from buf, which
// holds stream byte b at buf[0].
__device__ __forceinline__ void netStream(const gcclNetP2PDesc &d, int first, int n, size_t b, size_t e, char *buf, bool gather) {
	size_t pos = 0;
	for (int i = first; i < first + n && pos < e; i++) {
		char *ptr = d.pieces[i].ptr;
		const size_t len = d.pieces[i].bytes;
		const size_t lo = pos > b ? pos : b;
		const size_t hi = smin(pos + len, e);
		if (lo < hi) {
			if (gather) {
				moveBytes(ptr + (lo - pos), false, buf + (lo - b), nullptr, hi - lo);
			} else {
				moveBytes(buf + (lo - b), true, ptr + (lo - pos), nullptr, hi - lo);
			}
		}
		pos += len;
	}
}

// gccl_net_p2p: block 2j sends peer j's byte stream, block 2j+1 receives
// it, one slot at a time (an empty stream moves nothing).
extern "C" __global__ void __launch_bounds__(GCCL_THREADS)
	gccl_net_p2p(const __grid_constant__ gcclComm c, const __grid_constant__ gcclNetP2PDesc d) {
	__shared__ RingShared sh;
	const int j = blockIdx.x / 2;
	if (j >= d.npeers || j >= GCCL_NET_P2P_MAX_PEERS) return;
	const gcclNetPeer &pr = d.peers[j];
	const bool sending = (blockIdx.x & 1) == 0;
	Fifo f;
	if (threadIdx.x == 0) {
		if (sending) fifoOpenSend(f, pr.send);
		else fifoOpenRecv(f, pr.recv);
	}
	const size_t total = sending ? pr.sendBytes : pr.recvBytes;
	for (size_t b = 0; b < total; b += d.slotBytes) {
		const size_t e = smin(total, b + d.slotBytes);
		if (sending) {
			if (!waitSlots(c, sh, &f, nullptr, d.nslots, d.slotBytes)) return;
			netStream(d, pr.sendFirst, pr.nsend, b, e, sh.sendSlot, true);
			if (!postSlots(c, sh, &f, nullptr, d.nslots, e - b, true)) return;
		} else {
			if (!waitSlots(c, sh, nullptr, &f, d.nslots, d.slotBytes)) return;
			const unsigned int got = recvSize(f, d.nslots);
			netStream(d, pr.recvFirst, pr.nrecv, b, e, sh.recvSlot, false);
			if (!postSlots(c, sh, nullptr, &f, d.nslots, 0, got == e - b)) return;
		}
	}
}
