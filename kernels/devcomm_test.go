package kernels

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// commMirror is struct gcclComm as encoding/binary lays it out: every field
// is naturally aligned without padding, so binary.Write gives the C bytes.
type commMirror struct {
	In, Out, Scratch, Flags                           [MaxRanks]uint64
	Counters, AbortFlag, Status, TimeoutNs, ScratchBy uint64
	NRanks, Rank, Root, Key                           uint32
}

// TestCommPut: Encode and Put write every field of random Comms where
// the C struct has it (checked against encoding/binary, whose offsets
// TestCommLayoutMatchesC pins), and Put overwrites stale bytes.
func TestCommPut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	require.Equal(t, DevCommBytes, binary.Size(commMirror{}))
	for range 100 {
		var c DevComm
		var m commMirror
		for r := range MaxRanks {
			for _, f := range []struct {
				dst *uintptr
				mir *uint64
			}{{&c.In[r], &m.In[r]}, {&c.Out[r], &m.Out[r]}, {&c.Scratch[r], &m.Scratch[r]}, {&c.Flags[r], &m.Flags[r]}} {
				*f.dst = uintptr(rng.Uint64())
				*f.mir = uint64(*f.dst)
			}
		}
		c.Counters, c.AbortFlag, c.Status = uintptr(rng.Uint64()), uintptr(rng.Uint64()), uintptr(rng.Uint64())
		c.TimeoutNs, c.ScratchBytes = rng.Uint64(), rng.Uint64()
		c.NRanks, c.Rank, c.Root, c.Key = rng.Int32(), -rng.Int32(), rng.Int32(), rng.Uint32()
		m.Counters, m.AbortFlag, m.Status = uint64(c.Counters), uint64(c.AbortFlag), uint64(c.Status)
		m.TimeoutNs, m.ScratchBy = c.TimeoutNs, c.ScratchBytes
		m.NRanks, m.Rank, m.Root, m.Key = uint32(c.NRanks), uint32(c.Rank), uint32(c.Root), c.Key
		var want bytes.Buffer
		require.NoError(t, binary.Write(&want, binary.LittleEndian, &m))
		require.Equal(t, want.Bytes(), c.Encode())
		buf := make([]byte, DevCommBytes+5)
		for i := range buf {
			buf[i] = 0xA5 // poison: Put must overwrite all of it
		}
		c.Put(buf)
		require.Equal(t, want.Bytes(), buf[:DevCommBytes])
		require.Equal(t, []byte{0xA5, 0xA5, 0xA5, 0xA5, 0xA5}, buf[DevCommBytes:], "Put wrote past DevCommBytes")
	}
	require.Panics(t, func() { (&DevComm{}).Put(make([]byte, DevCommBytes-1)) })
}
