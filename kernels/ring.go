package kernels

import "encoding/binary"

// The ring kernels (module Ring, kernels/ring/ring.cu; docs/gpunet.md):
// one kernel per collective for communicators whose ranks talk through
// FIFOs in pinned host memory that a proxy moves over the network.
const (
	// Reduction kernels (ReductionName gives the entry point for a type and
	// operator): (DevComm, RingDesc, scalarBits uint64, scalarPtr uintptr).
	RingAllReduce     = "ring_allreduce"     // RingDesc.Count elements
	RingReduceScatter = "ring_reducescatter" // RingDesc.Count elements per rank
	RingReduce        = "ring_reduce"        // RingDesc.Count elements, to RingDesc.Root
	// RingAllReduceGather is the small all-reduce in n-1 ring steps
	// (gpuplan.Ring.Gather): one channel, RingDesc.Count elements that fit
	// one slot, at most RingGatherMaxRanks ranks.
	RingAllReduceGather = "ring_allreduce_gather"
	// Data-type independent: (DevComm, RingDesc).
	RingAllGather = "gccl_ring_allgather" // RingDesc.Count bytes per rank
	RingBroadcast = "gccl_ring_broadcast" // RingDesc.Count bytes from RingDesc.Root
	// NetP2P is a launch's sends and receives over per-peer FIFOs:
	// (DevComm, NetP2PDesc).
	NetP2P = "gccl_net_p2p"
)

// Limits of the ring kernels' descriptors (ring.cu).
const (
	RingMaxChannels = 16 // GCCL_RING_MAX_CHANNELS: the most blocks of a ring kernel
	NetP2PMaxPeers  = 8  // GCCL_NET_P2P_MAX_PEERS: peers of one gccl_net_p2p launch
	NetP2PMaxPieces = 64 // GCCL_NET_P2P_MAX_PIECES: its Send and Recv buffers
	FIFOSlots       = 8  // slots per FIFO (docs/gpunet.md's NSlots)
	// RingGatherMaxRanks (GCCL_RING_GATHER_MAX_RANKS) bounds the ranks of
	// ring_allreduce_gather: each rank keeps the n-1 slots it received.
	RingGatherMaxRanks = FIFOSlots + 1
	// RingTrailerBytes (GCCL_RING_TRAILER) is the key trailer every slot of
	// a ring collective carries after its data (RingSlotData).
	RingTrailerBytes  = 16
	FIFOHeader        = 4096
	FIFOTailOffset    = 0
	FIFOHeadOffset    = 64
	FIFOSizesOffset   = 128
	ringFifoBytes     = 4 * 8
	ringDescHeadBytes = 4*8 + 4*4 + 8
)

// FIFO is one direction of one connection as a kernel sees it (struct
// gcclFifo): device addresses inside the FIFO's pinned host memory.
type FIFO struct {
	Slots, Tail, Head, Sizes uintptr
}

// FIFOAt is the FIFO whose memory starts at the device address base.
func FIFOAt(base uintptr) FIFO {
	return FIFO{Slots: base + FIFOHeader, Tail: base + FIFOTailOffset, Head: base + FIFOHeadOffset, Sizes: base + FIFOSizesOffset}
}

// RingSlotData is the data one slot of slotBytes carries for a ring
// collective: every such slot ends with a trailer, the launch's operation
// key (DevComm.Key) at the first 16-byte boundary after the data, which
// the receiving kernel checks with the slot's size, so that ranks that
// launched different operations fail with StatusBadUsage even where their
// slots have the same sizes. The point-to-point kernel's slots have none.
func RingSlotData(slotBytes int) int { return slotBytes - RingTrailerBytes }

// FIFOBytes is the size of one FIFO with slots of slotBytes.
func FIFOBytes(slotBytes int) int { return FIFOHeader + FIFOSlots*slotBytes }

func (f *FIFO) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b, uint64(f.Slots))
	le.PutUint64(b[8:], uint64(f.Tail))
	le.PutUint64(b[16:], uint64(f.Head))
	le.PutUint64(b[24:], uint64(f.Sizes))
}

// RingConn is one channel's connections (struct gcclRingConn).
type RingConn struct{ Send, Recv FIFO }

// RingDesc is a ring collective (struct gcclRingDesc), passed after the
// DevComm, whose In/Out/Scratch/Flags the ring kernels do not read. The
// ring is the ranks in the order of the device array at Ranks (NRanks
// int32s: the rank at each ring position); the kernels step by ring
// position and place the per-rank blocks of reduce-scatter and
// all-gather by rank.
type RingDesc struct {
	In, Out   uintptr
	Count     uint64 // see the kernel names
	SlotBytes uint64
	NSlots    int32
	NRanks    int32
	Pos       int32                     // this rank's ring position
	Root      int32                     // the root's ring position (broadcast, reduce)
	Ranks     uintptr                   // device memory: the rank at each ring position
	Ch        [RingMaxChannels]RingConn // the grid's channels, in block order
}

// RingDescBytes is sizeof(gcclRingDesc) and RingDescAlign its alignment.
const (
	RingDescBytes = ringDescHeadBytes + RingMaxChannels*2*ringFifoBytes
	RingDescAlign = 8
)

// Put writes d's C layout into b[:RingDescBytes].
func (d *RingDesc) Put(b []byte) {
	b = b[:RingDescBytes]
	le := binary.LittleEndian
	le.PutUint64(b, uint64(d.In))
	le.PutUint64(b[8:], uint64(d.Out))
	le.PutUint64(b[16:], d.Count)
	le.PutUint64(b[24:], d.SlotBytes)
	le.PutUint32(b[32:], uint32(d.NSlots))
	le.PutUint32(b[36:], uint32(d.NRanks))
	le.PutUint32(b[40:], uint32(d.Pos))
	le.PutUint32(b[44:], uint32(d.Root))
	le.PutUint64(b[48:], uint64(d.Ranks))
	at := b[ringDescHeadBytes:]
	for i := range d.Ch {
		d.Ch[i].Send.put(at[i*2*ringFifoBytes:])
		d.Ch[i].Recv.put(at[i*2*ringFifoBytes+ringFifoBytes:])
	}
}

// NetPiece is one Send or Recv buffer of a point-to-point launch.
type NetPiece struct {
	Ptr   uintptr
	Bytes uint64
}

// NetPeer is one peer of a point-to-point launch (struct gcclNetPeer):
// its FIFOs and its pieces, Pieces[SendFirst, SendFirst+NSend) one byte
// stream of SendBytes, likewise the receives.
type NetPeer struct {
	Send, Recv           FIFO
	SendBytes, RecvBytes uint64
	SendFirst, NSend     int32
	RecvFirst, NRecv     int32
}

// NetP2PDesc is a point-to-point launch (struct gcclNetP2PDesc); the grid
// is 2*NPeers blocks.
type NetP2PDesc struct {
	SlotBytes uint64
	NSlots    int32
	NPeers    int32
	Peers     [NetP2PMaxPeers]NetPeer
	Pieces    [NetP2PMaxPieces]NetPiece
}

const (
	netPeerBytes = 2*ringFifoBytes + 2*8 + 4*4
	// NetP2PDescBytes is sizeof(gcclNetP2PDesc) and NetP2PDescAlign its alignment.
	NetP2PDescBytes = 16 + NetP2PMaxPeers*netPeerBytes + NetP2PMaxPieces*16
	NetP2PDescAlign = 8
)

// Put writes d's C layout into b[:NetP2PDescBytes].
func (d *NetP2PDesc) Put(b []byte) {
	b = b[:NetP2PDescBytes]
	le := binary.LittleEndian
	le.PutUint64(b, d.SlotBytes)
	le.PutUint32(b[8:], uint32(d.NSlots))
	le.PutUint32(b[12:], uint32(d.NPeers))
	at := b[16:]
	for i := range d.Peers {
		p := &d.Peers[i]
		q := at[i*netPeerBytes:]
		p.Send.put(q)
		p.Recv.put(q[ringFifoBytes:])
		le.PutUint64(q[64:], p.SendBytes)
		le.PutUint64(q[72:], p.RecvBytes)
		le.PutUint32(q[80:], uint32(p.SendFirst))
		le.PutUint32(q[84:], uint32(p.NSend))
		le.PutUint32(q[88:], uint32(p.RecvFirst))
		le.PutUint32(q[92:], uint32(p.NRecv))
	}
	at = at[NetP2PMaxPeers*netPeerBytes:]
	for i, pc := range d.Pieces {
		le.PutUint64(at[16*i:], uint64(pc.Ptr))
		le.PutUint64(at[16*i+8:], pc.Bytes)
	}
}
