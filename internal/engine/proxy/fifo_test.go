package proxy_test

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aligned is n zeroed bytes starting at a multiple of 4096 plus off.
func aligned(n, off int) []byte {
	b := make([]byte, n+8192)
	start := int(-uintptr(unsafe.Pointer(&b[0]))&4095) + off
	return b[start : start+n : start+n]
}

// TestLayout: the constants are docs/gpunet.md's, and the accessors read
// and write the words there, little-endian.
func TestLayout(t *testing.T) {
	assert.Equal(t, 8, proxy.NSlots)
	assert.Equal(t, 4096, proxy.HeaderBytes)
	assert.Equal(t, 0, proxy.TailOffset)
	assert.Equal(t, 64, proxy.HeadOffset)
	assert.Equal(t, 128, proxy.SizesOffset)
	assert.Equal(t, 512<<10, proxy.DefaultSlotBytes)
	assert.Equal(t, 4096+8*8192, proxy.FIFOBytes(8192))

	const slot = 8192
	mem := aligned(proxy.FIFOBytes(slot), 0)
	var pin runtime.Pinner
	pin.Pin(&mem[0])
	defer pin.Unpin()
	f, err := proxy.NewFIFO(mem, slot)
	require.NoError(t, err)
	assert.Equal(t, slot, f.SlotBytes())
	le := binary.LittleEndian

	f.StoreTail(0x0102030405060708)
	f.StoreHead(0x1112131415161718)
	assert.Equal(t, uint64(0x0102030405060708), le.Uint64(mem[0:]))
	assert.Equal(t, uint64(0x1112131415161718), le.Uint64(mem[64:]))
	le.PutUint64(mem[0:], 77)
	le.PutUint64(mem[64:], 66)
	assert.Equal(t, uint64(77), f.Tail())
	assert.Equal(t, uint64(66), f.Head())
	for s := uint64(0); s < 3*proxy.NSlots; s++ {
		f.SetSize(s, uint32(1000+s))
		assert.Equal(t, uint32(1000+s), le.Uint32(mem[128+4*(s%8):]), "sizes[%d]", s%8)
		assert.Equal(t, uint32(1000+s), f.Size(s))
		off := 4096 + int(s%8)*slot
		assert.Equal(t, off, f.SlotOffset(s))
		sl := f.Slot(s)
		require.Len(t, sl, slot)
		assert.Equal(t, slot, cap(sl), "a slot cannot be appended past")
		assert.Same(t, &mem[off], &sl[0], "slot %d", s)
	}
}

// TestNewFIFOErrors: bad slot sizes, lengths and alignments are
// InvalidArgument errors that say what to do.
func TestNewFIFOErrors(t *testing.T) {
	for _, sb := range []int{0, -4096, 1000, 4097, 2 << 30} {
		err := proxy.CheckSlotBytes(sb)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "slotBytes %d", sb)
		assert.Contains(t, err.Error(), "multiple of 4096")
		_, err = proxy.NewFIFO(aligned(4096, 0), sb)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "slotBytes %d", sb)
	}
	require.NoError(t, proxy.CheckSlotBytes(4096))

	_, err := proxy.NewFIFO(aligned(proxy.FIFOBytes(4096)-1, 0), 4096)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "FIFOBytes")
	_, err = proxy.NewFIFO(nil, 4096)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)

	for _, off := range []int{4, 8, 32} {
		_, err = proxy.NewFIFO(aligned(proxy.FIFOBytes(4096), off), 4096)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "offset %d", off)
		assert.Contains(t, err.Error(), "aligned")
	}
	f, err := proxy.NewFIFO(aligned(proxy.FIFOBytes(4096), 64), 4096)
	require.NoError(t, err, "64-byte alignment is enough")
	assert.False(t, f.IsZero())
	assert.True(t, proxy.FIFO{}.IsZero())
}
