package kernels

import "encoding/binary"

// Comm mirrors struct gcclComm (common.cuh), the first argument of every
// collective kernel. Pointers are device addresses valid on the launching
// GPU (peers' buffers mapped through CUDA IPC or cuMem import).
type Comm struct {
	In, Out, Scratch [MaxRanks]uintptr // per rank: input, output, scratch
	Flags            [MaxRanks]uintptr // per rank: flag array (FlagsWords uint32)
	Counters         uintptr           // this rank's counter array (CounterWords uint32)
	AbortFlag        uintptr           // host-mapped uint32 the host sets to abort, or 0
	Status           uintptr           // uint32 the kernel reports failures to, or 0
	TimeoutNs        uint64            // bound on every wait, 0 = none
	ScratchBytes     uint64            // size of each rank's scratch buffer
	NRanks, Rank     int32
	Root             int32 // broadcast/reduce root, or the peer of a p2p copy
	// RegKey identifies the registered buffers of the operation (0: staged);
	// a collective kernel fails with StatusBadUsage when a peer's differs.
	RegKey uint32
}

// CommBytes is sizeof(gcclComm) and CommAlign its alignment.
const (
	CommBytes = 4*MaxRanks*8 + 5*8 + 4*4
	CommAlign = 8
)

// Encode lays c out as the C struct (little-endian, natural alignment), for
// cuda.Args.Struct(c.Encode(), kernels.CommAlign).
func (c *Comm) Encode() []byte {
	b := make([]byte, 0, CommBytes)
	le := binary.LittleEndian
	for _, arr := range [][MaxRanks]uintptr{c.In, c.Out, c.Scratch, c.Flags} {
		for _, p := range arr {
			b = le.AppendUint64(b, uint64(p))
		}
	}
	for _, v := range []uint64{uint64(c.Counters), uint64(c.AbortFlag), uint64(c.Status), c.TimeoutNs, c.ScratchBytes} {
		b = le.AppendUint64(b, v)
	}
	for _, v := range []uint32{uint32(c.NRanks), uint32(c.Rank), uint32(c.Root), c.RegKey} {
		b = le.AppendUint32(b, v)
	}
	return b
}
