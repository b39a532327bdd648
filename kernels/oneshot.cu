// One-shot (LL) reduce-scatter, reduce, all-gather and broadcast: small
// operations on user buffers the peers do not map, in one launch with no
// barrier (ll.cuh). c.in[rank] and c.out[rank] are this rank's buffers,
// c.scratch[r] rank r's direct area; slots hold 16 bytes per 8 of data.
#include "instantiate.cuh"
#include "ll.cuh"

// reducescatter_oneshot: count elements per block. Each rank sends block p
// of its input to peer p and reduces block rank from every rank (premulsum:
// its blocks scaled by its factor as they leave its input).
template <typename T, int OP>
__device__ __forceinline__ void reducescatter_oneshot(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	const int n = c.nranks, me = c.rank;
	const size_t bytes = count * sizeof(T), units = llUnits(bytes);
	LLHalf h;
	if (!llBegin(c, units * 16, h)) return;
	forEachUnit(units, [&](size_t u) {
		for (int p = 0; p < n; p++)
			if (p != me) llPush(c, h, p, u, red.scaleUnit(loadUnit(c.in[me] + p * bytes, u, bytes)));
		uint2 res;
		if (!llReduceUnit<T, OP>(c, h, red, u, red.scaleUnit(loadUnit(c.in[me] + me * bytes, u, bytes)), res))
			return false;
		storeUnit(c.out[me], u, bytes, res);
		return true;
	});
	llFinish(c, h.epoch);
}

// reduce_oneshot: every rank sends its input to the root, which reduces
// them all; the root says hello to the others (they receive no data), and
// the others to each other (ll.cuh). Premulsum: every rank's input is
// scaled by its factor as it leaves.
template <typename T, int OP>
__device__ __forceinline__ void reduce_oneshot(const gcclComm &c, size_t count, const Red<T, OP> &red) {
	const int me = c.rank, root = c.root;
	const size_t bytes = count * sizeof(T), units = llUnits(bytes);
	LLHalf h;
	if (!llBegin(c, units * 16, h)) return;
	if (me != root) {
		forEachUnit(units, [&](size_t u) {
			llPush(c, h, root, u, red.scaleUnit(loadUnit(c.in[me], u, bytes)));
			return true;
		});
		llHello(c, h, root);
		llHear(c, h, -1);
	} else {
		llHello(c, h, -1);
		forEachUnit(units, [&](size_t u) {
			uint2 res;
			if (!llReduceUnit<T, OP>(c, h, red, u, red.scaleUnit(loadUnit(c.in[me], u, bytes)), res)) return false;
			storeUnit(c.out[me], u, bytes, res);
			return true;
		});
	}
	llFinish(c, h.epoch);
}

GCCL_INSTANTIATE_RED(reducescatter_oneshot)
GCCL_INSTANTIATE_RED(reduce_oneshot)

// gccl_allgather_oneshot: nbytes per rank; each rank sends its input to
// every peer and stores every rank's at rank*nbytes of its output.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_allgather_oneshot(const gcclComm c, unsigned long long nbytes) {
	const int n = c.nranks, me = c.rank;
	const size_t units = llUnits(nbytes);
	LLHalf h;
	if (!llBegin(c, units * 16, h)) return;
	forEachUnit(units, [&](size_t u) {
		const uint2 mine = loadUnit(c.in[me], u, nbytes);
		for (int p = 0; p < n; p++)
			if (p != me) llPush(c, h, p, u, mine);
		storeUnit(c.out[me] + me * nbytes, u, nbytes, mine);
		Waiter w(c);
		for (int r = 0; r < n; r++) {
			uint2 v;
			if (r == me) continue;
			if (!llPull(c, h, r, u, v, w)) return false;
			storeUnit(c.out[me] + r * nbytes, u, nbytes, v);
		}
		return true;
	});
	llFinish(c, h.epoch);
}

// gccl_broadcast_oneshot: the root sends its nbytes input to every peer
// (and copies it to its output unless in place); the others say hello to
// every peer (the root receives no data, nor do they from each other) and
// store what arrives.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_broadcast_oneshot(const gcclComm c, unsigned long long nbytes) {
	const int n = c.nranks, me = c.rank, root = c.root;
	const size_t units = llUnits(nbytes);
	LLHalf h;
	if (!llBegin(c, units * 16, h)) return;
	if (me == root) {
		forEachUnit(units, [&](size_t u) {
			const uint2 v = loadUnit(c.in[me], u, nbytes);
			for (int p = 0; p < n; p++)
				if (p != me) llPush(c, h, p, u, v);
			if (c.out[me] != c.in[me]) storeUnit(c.out[me], u, nbytes, v);
			return true;
		});
		llHear(c, h, -1);
	} else {
		llHello(c, h, -1);
		forEachUnit(units, [&](size_t u) {
			Waiter w(c);
			uint2 v;
			if (!llPull(c, h, root, u, v, w)) return false;
			storeUnit(c.out[me], u, nbytes, v);
			return true;
		});
		llHear(c, h, root);
	}
	llFinish(c, h.epoch);
}
