package kernels

import "encoding/binary"

// DevComm is a communicator as a kernel sees it (NCCL's ncclDevComm): it
// mirrors struct gcclComm (common.cuh), the first argument of every
// collective kernel. Pointers are device addresses valid on the launching
// GPU (peers' buffers mapped through CUDA IPC or cuMem import).
type DevComm struct {
	In, Out, Scratch [MaxRanks]uintptr // per rank: input, output, scratch
	Flags            [MaxRanks]uintptr // per rank: flag array (FlagsWords uint32)
	Counters         uintptr           // this rank's counter array (CounterWords uint32)
	AbortFlag        uintptr           // host-mapped uint32 the host sets to abort, or 0
	Status           uintptr           // uint32 the kernel reports failures to, or 0
	TimeoutNs        uint64            // bound on every wait, 0 = none
	ScratchBytes     uint64            // size of each rank's scratch buffer
	NRanks, Rank     int32
	Root             int32 // broadcast/reduce root, or the peer of a p2p copy
	// Key is what the ranks must agree on for the operation (C: regKey): a
	// hash of its descriptor and, on registered buffers, of their
	// registrations and offsets. A kernel that compares keys at its first
	// barrier fails with StatusBadUsage when a peer's differs.
	Key uint32
}

// DevCommBytes is sizeof(gcclComm) and DevCommAlign its alignment.
const (
	DevCommBytes = 4*MaxRanks*8 + 5*8 + 4*4
	DevCommAlign = 8
)

// Encode lays c out as the C struct (little-endian, natural alignment), for
// cuda.Args.Struct(c.Encode(), kernels.DevCommAlign). Launch paths use Put
// into cuda.Args.Slot instead, which does not allocate.
func (c *DevComm) Encode() []byte {
	b := make([]byte, DevCommBytes)
	c.Put(b)
	return b
}

// Put writes c's encoding (Encode's bytes) into b[:DevCommBytes]; it panics
// if b is shorter, as a slice index would.
func (c *DevComm) Put(b []byte) {
	b = b[:DevCommBytes]
	le := binary.LittleEndian
	for i, arr := range [...]*[MaxRanks]uintptr{&c.In, &c.Out, &c.Scratch, &c.Flags} {
		at := b[i*MaxRanks*8:]
		for r, p := range arr {
			le.PutUint64(at[8*r:], uint64(p))
		}
	}
	w := b[4*MaxRanks*8:]
	le.PutUint64(w, uint64(c.Counters))
	le.PutUint64(w[8:], uint64(c.AbortFlag))
	le.PutUint64(w[16:], uint64(c.Status))
	le.PutUint64(w[24:], c.TimeoutNs)
	le.PutUint64(w[32:], c.ScratchBytes)
	le.PutUint32(w[40:], uint32(c.NRanks))
	le.PutUint32(w[44:], uint32(c.Rank))
	le.PutUint32(w[48:], uint32(c.Root))
	le.PutUint32(w[52:], c.Key)
}
