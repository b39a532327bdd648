package topo

import "strconv"

// LinkKind is how one GPU reaches another's memory.
type LinkKind uint8

// The link kinds, in the order Agree ranks them (LinkUnknown aside).
const (
	// LinkUnknown: nothing known, as where the peer's GPU is not visible
	// to this process (CUDA_VISIBLE_DEVICES) or the driver could not say.
	LinkUnknown LinkKind = iota
	// LinkNone: the driver reports no peer access.
	LinkNone
	// LinkPCIe: peer access without native atomics (see Link).
	LinkPCIe
	// LinkNVLink: peer access with native atomics (see Link).
	LinkNVLink
	// LinkSameDevice: both ranks run on one GPU; no link is crossed.
	LinkSameDevice
	numLinkKinds
)

var linkNames = [numLinkKinds]string{"unknown", "none", "PCIe", "NVLink", "same device"}

func (k LinkKind) String() string {
	if k < numLinkKinds {
		return linkNames[k]
	}
	return "LinkKind(" + strconv.Itoa(int(k)) + ")"
}

// P2PAttrs are the CUDA driver's answers (cuDeviceGetP2PAttribute) about
// the link from one GPU to another.
type P2PAttrs struct {
	Access       bool // CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED
	NativeAtomic bool // CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED
}

// Link classifies the link from one GPU to another, distinct one by the
// driver's P2P attributes: no peer access is LinkNone; peer access with
// native atomics is LinkNVLink; peer access without them is LinkPCIe.
//
// The NVLink/PCIe split is an inference, not something the driver states:
// the driver API has no link-type attribute (NVML's NVLink queries do, and
// NCCL reads those). Native peer atomics are what separates the two on
// current NVIDIA systems: a GPU's atomic operations on a peer's memory run
// natively over NVLink (direct or through NVSwitch), while PCIe
// peer-to-peer carries reads and writes but not GPU atomics, so the driver
// reports them unsupported there. A future interconnect that carries
// atomics would read as NVLink. How far apart two PCIe peers are (one
// switch, or through the CPU) is for the PCI paths of Detect to tell
// (Hops); Link does not look.
func Link(a P2PAttrs) LinkKind {
	switch {
	case !a.Access:
		return LinkNone
	case a.NativeAtomic:
		return LinkNVLink
	default:
		return LinkPCIe
	}
}

// Agree is the link two ranks of a pair both take, from their own views
// of it (a from one side, b from the other), so that both derive the same
// grids: a view that is LinkUnknown yields to the other; two known views
// that differ give the slower (None, then PCIe, then NVLink). Agree is
// symmetric.
func Agree(a, b LinkKind) LinkKind {
	switch {
	case a == LinkUnknown || a >= numLinkKinds:
		if b >= numLinkKinds {
			return LinkUnknown
		}
		return b
	case b == LinkUnknown || b >= numLinkKinds:
		return a
	}
	return min(a, b)
}
