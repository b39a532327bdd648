package gpu

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/transport/peermem"
)

// Ranks that share a GPU in one process run their kernels side by side in
// one context, with no time-slicing between them, and the kernels of a
// collective wait for each other at barriers: every block of every kernel
// that may run at once must be resident together, or a resident kernel
// spins for a peer that cannot start (a deadlock until the timeout). A
// communicator's launches on one rank run one after another (the stream
// chain), so on one GPU at most one kernel per (communicator, local rank)
// runs at a time. The SMs of each GPU are therefore shared out among the
// communicators with ranks on it in this process: each takes a grid cap
// (the most blocks of any of its kernels) for each of its ranks there, at
// most half of the SMs still free over its ranks, kept until its last rank
// there closes; a kernel is assumed to fit one block per SM. Two ranks on
// an H100 (132 SMs) get 33 blocks each, four ranks 16, and later
// communicators what is left. Graph replays are kernels too: launching two
// graphs of one communicator at once, or a graph beside its eager
// operations, breaks the one-kernel-per-rank rule (NCCL asks the same).

// smKey names one communicator's ranks on one GPU of this process: their
// communication buffers, allocated while any of them is open, so a later
// communicator cannot take the same key while this one holds its share.
type smKey struct {
	ordinal int32
	bufs    string
}

type smEntry struct {
	share int // grid cap of each local rank's kernels
	ranks int // the communicator's ranks on the GPU
	open  int // ranks that have not released the share
}

var smTable = struct {
	sync.Mutex
	used    map[int32]int // SMs held per GPU ordinal
	entries map[smKey]*smEntry
}{used: map[int32]int{}, entries: map[smKey]*smEntry{}}

// smShare is the grid cap of a communicator with ranks on a GPU that has
// free SMs not yet held: half of them over its ranks, within GridMax; at
// least one block per rank while there is an SM per rank; 0 when there is
// not.
func smShare(free, ranks int) int {
	if ranks < 1 || free < ranks {
		return 0
	}
	return min(gpuplan.GridMax, max(1, free/(2*ranks)))
}

// localKey is the key of the ranks in offers that run on the GPU and in
// the process of offers[me], and how many they are.
func localKey(offers []peermem.Offer, me int) (smKey, int) {
	mine := offers[me]
	var bufs []uintptr
	for _, o := range offers {
		if o.HostHash == mine.HostHash && o.PID == mine.PID && o.Ordinal == mine.Ordinal {
			bufs = append(bufs, o.Ptr)
		}
	}
	slices.Sort(bufs)
	var b strings.Builder
	for _, p := range bufs {
		b.WriteString(strconv.FormatUint(uint64(p), 16))
		b.WriteByte(',')
	}
	return smKey{mine.Ordinal, b.String()}, len(bufs)
}

// smReserve takes (or joins) the share of key's communicator, whose ranks
// on the GPU are ranks, on a GPU of sms multiprocessors.
func smReserve(key smKey, ranks, sms int) (int, error) {
	smTable.Lock()
	defer smTable.Unlock()
	if e := smTable.entries[key]; e != nil {
		e.open++
		return e.share, nil
	}
	free := sms - smTable.used[key.ordinal]
	share := smShare(free, ranks)
	if share == 0 {
		return 0, gccl.Errorf(gccl.InvalidUsage, "device",
			"GPU %d: %d of its %d SMs are held by other communicators whose ranks share it in this process, and the %d ranks of this one need one each to run side by side: "+
				"close some of those communicators, or run one process per rank (processes sharing a GPU are time-sliced and hold no SMs)",
			key.ordinal, sms-free, sms, ranks)
	}
	smTable.used[key.ordinal] += ranks * share
	smTable.entries[key] = &smEntry{share: share, ranks: ranks, open: 1}
	return share, nil
}

// smSettle lowers key's share to the cap every rank agreed on.
func smSettle(key smKey, agreed int) {
	smTable.Lock()
	defer smTable.Unlock()
	if e := smTable.entries[key]; e != nil && agreed < e.share {
		smTable.used[key.ordinal] -= e.ranks * (e.share - agreed)
		e.share = agreed
	}
}

// smRelease gives key's share back when its last local rank releases it.
func smRelease(key smKey) {
	smTable.Lock()
	defer smTable.Unlock()
	e := smTable.entries[key]
	if e == nil {
		return
	}
	if e.open--; e.open == 0 {
		smTable.used[key.ordinal] -= e.ranks * e.share
		delete(smTable.entries, key)
	}
}

// shareSMs caps the grids of a communicator some of whose ranks share a GPU
// in one process (every rank sees the same offers, so all of them come
// here): each rank on a shared GPU reserves its communicator's share, all
// ranks agree on the smallest, and every kernel's grid stays within it.
func (g *Backend) shareSMs(ctx context.Context, boot engine.Bootstrap, offers []peermem.Offer) error {
	share := gpuplan.GridMax
	key, ranks := localKey(offers, g.rank)
	if ranks > 1 {
		sms := smCount(g.drv, int(key.ordinal))
		if sms <= 0 {
			share = 1 // the driver cannot tell: one block per kernel, nothing held
		} else {
			s, err := smReserve(key, ranks, sms)
			if err != nil {
				return err
			}
			g.sm = &key
			share = s
		}
	}
	all, err := boot.AllGather(ctx, []byte{byte(share)})
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "bootstrap", "agreeing on the grid cap of a shared GPU: %w", err)
	}
	agreed := share
	for r, b := range all {
		if len(b) != 1 || b[0] == 0 {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a bad grid cap entry %v", r, b)
		}
		agreed = min(agreed, int(b[0]))
	}
	if g.sm != nil {
		smSettle(*g.sm, agreed)
	}
	g.set.GridCap = agreed
	g.set.MaxChannels = min(g.set.MaxChannels, agreed)
	g.log.Info("ranks of this communicator share a GPU in one process: its kernels take at most this many blocks, so that the kernels of concurrent ranks fit on the GPU together",
		"blocks", agreed, "channels", g.set.MaxChannels, "localRanks", ranks)
	return nil
}

// releaseSMs gives this rank's share back (free).
func (g *Backend) releaseSMs() {
	if g.sm != nil {
		smRelease(*g.sm)
		g.sm = nil
	}
}
