package gpu

import (
	"strings"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/kernels"
)

// The GPU paths that are not kernels: a device-to-device copy on the
// stream (one-rank collectives, sends to self), and nothing at all (an
// in-place one-rank collective).
const (
	PathCopy = "copy"
	PathNone = "none"
)

// Traffic is what one rank's kernels (or copies) read and write in device
// memory for one operation, wherever that memory lies (its own GPU or a
// peer's, through NVLink): every load and store counted once, whatever the
// caches make of it. LL slots count 16 bytes per 8 bytes of data (the
// flags); flag words and hello lines are left out.
type Traffic struct {
	Read, Write int64
}

// Add is t plus u.
func (t Traffic) Add(u Traffic) Traffic { return Traffic{t.Read + u.Read, t.Write + u.Write} }

// TrafficOf returns rank's device memory traffic for one operation of
// kind over nranks that the GPU backend ran with path (Backend.LastPath: a
// kernel family of package kernels, PathCopy or PathNone). count is the
// operation's count as the API takes it (per rank for AllGather, per block
// for ReduceScatter). A Send and its Recv each count their side of the
// p2p kernel; a copy to self counts on the Send. ok is false for a path
// the model does not know (then the figures are zero).
//
// It follows the loops of kernels/*.cu: staged kernels copy the input into
// the bulk area, work across the ranks' areas and copy the result out;
// one-shot kernels store LL lines into the peers' areas and read their own;
// zero-copy kernels load and store the registered user buffers directly.
func TrafficOf(path string, kind algo.Kind, count int, t gccl.DataType, nranks, rank, root int, inPlace bool) (tr Traffic, ok bool) {
	n, b := int64(nranks), int64(count)*int64(t.Size())
	ll := 16 * ((b + 7) / 8) // an LL slot of b bytes
	rooted := rank == root
	rw := func(r, w int64) (Traffic, bool) { return Traffic{r, w}, true }
	unless := func(skip bool, v int64) int64 { // v, or 0 when skip
		if skip {
			return 0
		}
		return v
	}
	switch {
	case path == PathNone:
		return rw(0, 0)
	case path == PathCopy && kind == algo.P2PRecv:
		return rw(0, 0)
	case path == PathCopy || path == kernels.Copy:
		return rw(b, b)
	case path == kernels.P2P && (kind == algo.P2PSend || kind == algo.P2PRecv):
		return rw(b, b) // the sender stages into its area, the receiver pulls out of it
	}
	switch kind {
	case algo.AllReduce:
		switch path {
		case kernels.AllReduceOneShot:
			return rw(b+(n-1)*ll, (n-1)*ll+b)
		case kernels.AllReducePush: // the input is read once even with no peer to store it to
			return rw(b+n*b, (n-1)*b+b)
		case kernels.AllReducePipelined: // in, part of every area into every area, out
			return rw(3*b, 3*b)
		case kernels.AllReduceTwoShot:
			return rw(b, b)
		}
	case algo.ReduceScatter: // b is one block; the input holds n
		switch path {
		case kernels.ReduceScatterOneShot:
			return rw(n*b+(n-1)*ll, (n-1)*ll+b)
		case kernels.ReduceScatterStaged:
			return rw((n-1)*b+n*b, (n-1)*b+b)
		case kernels.ReduceScatter:
			return rw(n*b, b)
		}
	case algo.Reduce:
		switch path {
		case kernels.ReduceOneShot:
			if rooted {
				return rw(b+(n-1)*ll, b)
			}
			return rw(b, ll)
		case kernels.ReduceStaged: // in; part of every area into the root's; the root copies out
			return rw(2*b+unless(!rooted, b), b+b/n+unless(!rooted, b))
		case kernels.Reduce:
			return rw(b, b/n)
		}
	case algo.AllGather: // b per rank
		switch path {
		case kernels.AllGatherOneShot:
			return rw(b+(n-1)*ll, (n-1)*ll+n*b)
		case kernels.AllGatherStaged: // in; every peer's area into the output; own input into the output
			own := unless(inPlace, b)
			return rw(b+(n-1)*b+own, b+(n-1)*b+own)
		case kernels.AllGather:
			return rw(b, n*b)
		}
	case algo.Broadcast:
		switch path {
		case kernels.BroadcastOneShot:
			if rooted {
				return rw(b, (n-1)*ll+unless(inPlace, b))
			}
			return rw(ll, b)
		case kernels.BroadcastStaged: // the root in; part of the root's area into the others'; out
			in := unless(!rooted, b)
			return rw(in+b/n+b, in+(n-1)*b/n+b)
		case kernels.Broadcast: // the root first copies into its registered output
			pre := unless(!rooted || inPlace, b)
			return rw(pre+b/n, pre+b)
		}
	}
	return Traffic{}, false
}

// kernelFamily is the kernel a loaded entry point instantiates: the
// reduction kernel of "gccl_<kernel>_<type>_<op>" (kernels.ReductionName),
// else the entry point itself.
func kernelFamily(name string) string {
	rest, ok := strings.CutPrefix(name, "gccl_")
	if i := strings.LastIndexByte(rest, '_'); ok && i > 0 {
		if j := strings.LastIndexByte(rest[:i], '_'); j > 0 {
			if _, err := kernels.ReductionName(rest[:j], gccl.Float32, gccl.Sum); err == nil {
				return rest[:j]
			}
		}
	}
	return name
}
