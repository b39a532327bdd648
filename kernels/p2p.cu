// Point-to-point: all of a launch's sends and receives, every peer at once,
// in one kernel (gccl_p2p).
//
// The grid is split among the peers this rank talks to: pair j (this rank
// and d.pairs[j].peer) gets d.pairs[j].nch consecutive blocks, its channels
// 0..nch-1. Both ranks of a pair compute the same nch and the same
// per-channel plan from max(bytes each way), which both know, so channel k
// of the pair on one rank meets channel k on the other (p2p flag slot k of
// the pair, counter row peer), whatever the blocks' indexes in the grids.
//
// Rank r's bulk area (c.scratch[r]) holds one region of d.regionBytes per
// peer p (slot p for p < r, p-1 for p > r): what r sends to p goes through
// it. Channel k of the pair owns two halves of the region, and moves its
// slice of the pair's bytes (both directions) one segment at a time:
//
//	copyIn(0) | barrier | pull(0) copyIn(1) | barrier | pull(1) copyIn(2) | barrier ...
//
// copyIn(i) writes this rank's send bytes of segment i into its own half
// i&1; pull(i) reads the peer's half i&1 straight into the receive buffers.
// The barrier after pull(i) tells the peer that its half i&1 is free again
// (copyIn(i+2) writes it only after that barrier) and that segment i+1 is
// in. Nothing touches peer memory before the first barrier with that peer,
// and the last barrier keeps this kernel from ending while the peer still
// reads this rank's region (the next kernel may overwrite it at once).
#include "reduce.cuh"
#include "sync.cuh"

#define GCCL_P2P_MAX_PAIRS (GCCL_MAX_RANKS - 1)
#define GCCL_P2P_MAX_PIECES 192

// gcclP2PPiece is one Send or Recv buffer (this rank's device memory).
struct gcclP2PPiece {
	char *ptr;
	unsigned long long bytes;
};

// gcclP2PPair is one peer this rank talks to. Its send pieces are
// pieces[send, send+nsend) in issue order, one byte stream of sendBytes;
// its receive pieces pieces[recv, recv+nrecv), one stream of recvBytes.
struct gcclP2PPair {
	unsigned long long sendBytes;
	unsigned long long recvBytes;
	int peer;
	int nch; // channels (blocks) of the pair, the same on both ranks
	int send;
	int nsend;
	int recv;
	int nrecv;
};

// gcclP2PDesc is the launch, passed by value after the gcclComm (3368
// bytes; with the gcclComm 3680 of the 4096 bytes of kernel parameters).
struct gcclP2PDesc {
	int npairs;
	int reserved;
	unsigned long long regionBytes; // per peer, in every rank's bulk area
	gcclP2PPair pairs[GCCL_P2P_MAX_PAIRS];
	gcclP2PPiece pieces[GCCL_P2P_MAX_PIECES];
};

// p2pBarrierCh is p2pBarrier for channel ch of the pair (this rank, peer):
// flag slot rank*C+ch on the peer, counter (peer, ch) here. ch need not be
// blockIdx.x: the peer's block for the channel may sit elsewhere in its grid.
__device__ __forceinline__ bool p2pBarrierCh(const gcclComm &c, int peer, int ch) {
	__shared__ int ok;
	__syncthreads();
	if (threadIdx.x == 0) {
		uint32_t *ctr = c.counters + peer * GCCL_MAX_CHANNELS + ch;
		const uint32_t value = *ctr + 1;
		*ctr = value;
		ok = 1;
		__threadfence_system(); // the block's stores, ordered by __syncthreads, before the flag
		stReleaseSys(c.flags[peer] + GCCL_P2P_FLAGS + c.rank * GCCL_MAX_CHANNELS + ch, value);
		const uint32_t *mine = c.flags[c.rank] + GCCL_P2P_FLAGS + peer * GCCL_MAX_CHANNELS + ch;
		Waiter w(c);
		while ((int32_t)(ldAcquireSys(mine) - value) < 0) {
			if (!w.keepGoing()) {
				ok = 0;
				break;
			}
		}
	}
	__syncthreads();
	return ok != 0;
}

// A channel's slice is cut into at least three segments of at most a
// half (splitSeg), so that one segment's pull overlaps the next one's
// copy-in. Three, not the staged collectives' four: on an H100 (4 ranks
// sharing it, send/recv of 16 MiB, 11 channels a pair, slices of 1.5 MiB)
// three equal segments moved memory at 77.7-79.4 % of the same-run copy
// against 70.9-72.2 % for four, 74.7-74.8 % for two and 71.4-72.5 % for
// eight (docs/perf-notes.md, sixteenth session): each segment adds a
// pairwise barrier, and fewer leave a longer phase with one side idle.
constexpr int p2pParts = 3;

// p2pStream moves bytes [b, e) of the byte stream that d.pieces[first,
// first+n) make in order, to or from buf, which holds stream byte b at
// buf[0]: from the pieces into buf when gather, else from buf into them.
__device__ __forceinline__ void p2pStream(const gcclP2PDesc &d, int first, int n, size_t b, size_t e, char *buf,
					  bool gather) {
	size_t pos = 0;
	for (int i = first; i < first + n && pos < e; i++) {
		char *ptr = d.pieces[i].ptr;
		const size_t len = d.pieces[i].bytes;
		const size_t lo = pos > b ? pos : b;
		const size_t hi = smin(pos + len, e);
		if (lo < hi) {
			char *p = ptr + (lo - pos);
			char *q = buf + (lo - b);
			if (gather) {
				copyBytes(p, &q, 1, hi - lo);
			} else {
				copyBytes(q, &p, 1, hi - lo);
			}
		}
		pos += len;
	}
}

// p2pChannel runs channel ch of pair j (see the top of the file).
__device__ __forceinline__ void p2pChannel(const gcclComm &c, const gcclP2PDesc &d, int j, int ch) {
	const int me = c.rank;
	const int peer = d.pairs[j].peer;
	const int nch = d.pairs[j].nch;
	const size_t out = d.pairs[j].sendBytes, in = d.pairs[j].recvBytes;
	const int send = d.pairs[j].send, nsend = d.pairs[j].nsend;
	const int recv = d.pairs[j].recv, nrecv = d.pairs[j].nrecv;
	const size_t region = d.regionBytes;
	const size_t half = region / (size_t)nch / 2 / 16 * 16;
	if (half == 0) {
		if (threadIdx.x == 0) fail(c, GCCL_STATUS_BADARGS);
		return;
	}
	const size_t nbytes = out > in ? out : in;
	size_t per = (nbytes + nch - 1) / nch;
	per = (per + 15) / 16 * 16;
	const size_t b = smin(nbytes, per * ch);
	const size_t e = smin(nbytes, b + per);
	if (b >= e) return; // the peer's channel ch is empty too
	char *mine = c.scratch[me] + (size_t)(peer < me ? peer : peer - 1) * region + (size_t)ch * 2 * half;
	char *theirs = c.scratch[peer] + (size_t)(me < peer ? me : me - 1) * region + (size_t)ch * 2 * half;
	const size_t seg = splitSeg(half, e - b, p2pParts); // segments of the channel's slice; halves stay where they are
	{
		const size_t se = smin(e, b + seg);
		if (b < out) p2pStream(d, send, nsend, b, smin(se, out), mine, true);
	}
	if (!p2pBarrierCh(c, peer, ch)) return;
	size_t h = 0;
	for (size_t sb = b; sb < e; sb += seg, h ^= 1) {
		const size_t se = smin(e, sb + seg);
		if (sb < in) p2pStream(d, recv, nrecv, sb, smin(se, in), theirs + h * half, false);
		if (se < e && se < out) p2pStream(d, send, nsend, se, smin(smin(e, se + seg), out), mine + (h ^ 1) * half, true);
		if (!p2pBarrierCh(c, peer, ch)) return;
	}
}

// gccl_p2p: the launch's sends and receives of every peer but this rank.
extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_p2p(const gcclComm c, const gcclP2PDesc d) {
	int first = 0;
	for (int j = 0; j < d.npairs && j < GCCL_P2P_MAX_PAIRS; j++) {
		const int nch = d.pairs[j].nch;
		if ((int)blockIdx.x < first + nch) {
			p2pChannel(c, d, j, (int)blockIdx.x - first);
			return;
		}
		first += nch;
	}
}
