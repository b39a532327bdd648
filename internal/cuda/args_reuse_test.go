package cuda

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArgsReuseAndSlot: an Args reset and refilled packs exactly what a
// fresh one packs (padding zeroed though the old bytes were not), Slot
// returns a zeroed slot at the struct's alignment that the caller fills in
// place, and a warm reused Args does not allocate.
func TestArgsReuseAndSlot(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var reused Args
	for trial := range 200 {
		var fresh Args
		reused.Reset()
		for range 1 + rng.IntN(12) {
			switch rng.IntN(4) {
			case 0:
				v := rng.Uint32()
				fresh.U32(v)
				reused.U32(v)
			case 1:
				v := rng.Uint64()
				fresh.U64(v)
				reused.U64(v)
			case 2:
				b := make([]byte, 1+rng.IntN(40))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				align := 1 << rng.IntN(5)
				fresh.Struct(b, align)
				slot := reused.Slot(len(b), align)
				require.Equal(t, make([]byte, len(b)), slot, "trial %d: slot not zeroed", trial)
				copy(slot, b)
			case 3:
				fresh.U32(0) // a small value then a 16-aligned struct: padding
				reused.U32(0)
				b := []byte{byte(trial), 0xFF}
				fresh.Struct(b, 16)
				copy(reused.Slot(2, 16), b)
			}
		}
		require.NoError(t, reused.Err())
		require.Equal(t, fresh.Len(), reused.Len(), "trial %d", trial)
		fb, fo := fresh.packed()
		rb, ro := reused.packed()
		require.Equal(t, fo, ro, "trial %d offsets", trial)
		require.Equal(t, fb, rb, "trial %d bytes", trial)
		// Dirty the whole backing array, as a previous launch's values would.
		full := reused.buf[:cap(reused.buf)]
		for i := range full {
			full[i] = 0xEE
		}
	}
	reused.Reset()
	var slot []byte
	allocs := testing.AllocsPerRun(100, func() {
		reused.Reset()
		slot = reused.Slot(312, 8)
		reused.U64(7).F64(1)
	})
	assert.Zero(t, allocs)
	assert.Len(t, slot, 312)
	assert.Equal(t, uint64(7), binary.LittleEndian.Uint64(reused.Arg(1)))

	var bad Args
	assert.Len(t, bad.Slot(8, 3), 8)
	require.Error(t, bad.Err())
	buf, offs := (*Args)(nil).packed()
	assert.Equal(t, []byte{0}, buf)
	assert.Equal(t, []uint32{0}, offs)
}
