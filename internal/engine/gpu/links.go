package gpu

import (
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/transport/topo"
)

// linkView is what one rank tells the others at setup about the GPU links
// it can see: its own GPU's UUID and, for every GPU visible to its
// process, the link from its GPU to that one (topo.Link of the driver's
// P2P attributes). A rank's GPU ordinals mean nothing to another process
// (CUDA_VISIBLE_DEVICES), so GPUs are named by UUID.
type linkView struct {
	self  cuda.UUID // zero when the driver could not say
	links map[cuda.UUID]topo.LinkKind
}

// maxLinkViewGPUs bounds the GPUs one view lists (the count is one byte).
const maxLinkViewGPUs = 255

// localLinks is the view of the process's driver from GPU ordinal. What
// the driver cannot answer is left out (unknown), never an error: the
// links only tune grids.
func localLinks(drv cuda.Driver, ordinal int) linkView {
	v := linkView{links: map[cuda.UUID]topo.LinkKind{}}
	me, err := drv.DeviceGet(ordinal)
	if err != nil {
		return v
	}
	if v.self, err = drv.DeviceUUID(me); err != nil {
		return linkView{links: v.links}
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return v
	}
	for i := range min(n, maxLinkViewGPUs) {
		d, err := drv.DeviceGet(i)
		if err != nil || d == me {
			continue
		}
		u, err := drv.DeviceUUID(d)
		if err != nil {
			continue
		}
		access, err1 := drv.DeviceP2PAttribute(cuda.P2PAccessSupported, me, d)
		atomic, err2 := drv.DeviceP2PAttribute(cuda.P2PNativeAtomicSupported, me, d)
		if err1 != nil || err2 != nil {
			continue
		}
		v.links[u] = topo.Link(topo.P2PAttrs{Access: access != 0, NativeAtomic: atomic != 0})
	}
	return v
}

// encode appends the view: the UUID, a count byte, then each GPU's UUID
// and link kind (in no particular order: decoding makes a map again).
func (v linkView) encode(b []byte) []byte {
	b = append(b, v.self[:]...)
	n := min(len(v.links), maxLinkViewGPUs)
	b = append(b, byte(n))
	for u, k := range v.links {
		if n == 0 {
			break
		}
		n--
		b = append(append(b, u[:]...), byte(k))
	}
	return b
}

// decodeLinkView reads a view from the front of b and returns the rest;
// ok is false when b is too short.
func decodeLinkView(b []byte) (v linkView, rest []byte, ok bool) {
	const u = len(cuda.UUID{})
	if len(b) < u+1 {
		return v, b, false
	}
	copy(v.self[:], b)
	n := int(b[u])
	b = b[u+1:]
	if len(b) < n*(u+1) {
		return v, b, false
	}
	v.links = make(map[cuda.UUID]topo.LinkKind, n)
	for range n {
		var id cuda.UUID
		copy(id[:], b)
		v.links[id] = topo.LinkKind(b[u])
		b = b[u+1:]
	}
	return v, b, true
}

// peerLinks is the link from rank me to every rank (LinkSameDevice for
// itself) from every rank's view. Rank r's entry is topo.Agree of me's
// view of r's GPU and r's view of me's, so r computes the same for me
// from the same two views: both ranks of a pair derive the same grids.
// Ranks on one GPU (same UUID) are LinkSameDevice; a rank whose GPU has
// no UUID is LinkUnknown.
func peerLinks(views []linkView, me int) []topo.LinkKind {
	var zero cuda.UUID
	out := make([]topo.LinkKind, len(views))
	mine := views[me]
	for r, v := range views {
		switch {
		case r == me || mine.self != zero && v.self == mine.self:
			out[r] = topo.LinkSameDevice
		case mine.self == zero || v.self == zero:
			out[r] = topo.LinkUnknown
		default:
			out[r] = topo.Agree(mine.links[v.self], v.links[mine.self])
		}
	}
	return out
}
