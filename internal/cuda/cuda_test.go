package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadWithoutDriver(t *testing.T) {
	d, err := Load()
	if err == nil {
		require.NotNil(t, d)
		n, err := d.DeviceCount()
		require.NoError(t, err)
		t.Logf("a CUDA driver is present (%d devices); the no-driver path is not exercised", n)
		return
	}
	if os.Getenv("GCCL_REQUIRE_GPU") == "1" {
		t.Fatalf("GCCL_REQUIRE_GPU=1 but Load failed: %v", err)
	}
	assert.Nil(t, d)
	assert.True(t, errors.Is(err, ErrNoDriver), "%v", err)
	assert.True(t, errors.Is(err, gccl.ErrSystem), "%v", err)
	assert.Equal(t, gccl.SystemError, gccl.Code(err))
	assert.False(t, Available())
	_, err2 := Load()
	assert.Same(t, err, err2, "Load must be memoised")
}

func TestNewError(t *testing.T) {
	require.NoError(t, NewError("cuMemAlloc", Success, ""))
	err := NewError("cuMemAlloc", ErrorOutOfMemory, "out of memory")
	assert.True(t, errors.Is(err, gccl.ErrUnhandledCuda))
	assert.True(t, errors.Is(err, ErrorOutOfMemory))
	assert.False(t, errors.Is(err, ErrorNotReady))
	assert.Equal(t, ErrorOutOfMemory, ResultOf(err))
	assert.Contains(t, err.Error(), "cuMemAlloc")
	assert.Contains(t, err.Error(), "CUDA_ERROR_OUT_OF_MEMORY: out of memory")
	wrapped := gccl.Errorf(gccl.UnhandledCudaError, "x", "launching: %w", err)
	assert.Equal(t, ErrorOutOfMemory, ResultOf(wrapped))
	assert.Equal(t, ErrorUnknown, ResultOf(errors.New("other")))
	assert.Equal(t, Success, ResultOf(nil))
	assert.Equal(t, "CUresult(12345)", Result(12345).String())
}

func TestArgsPacking(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		var a Args
		type want struct {
			kind int
			u    uint64
			b    []byte
		}
		var ws []want
		for i := 0; i < 1+r.IntN(20); i++ {
			w := want{kind: r.IntN(4), u: r.Uint64()}
			switch w.kind {
			case 0:
				a.Ptr(uintptr(w.u))
			case 1:
				w.u &= math.MaxUint32
				a.U32(uint32(w.u))
			case 2:
				a.F64(math.Float64frombits(w.u))
			case 3:
				w.b = make([]byte, 1+r.IntN(70))
				for j := range w.b {
					w.b[j] = byte(r.Uint32())
				}
				a.Struct(w.b, 1<<r.IntN(5))
			}
			ws = append(ws, w)
		}
		require.NoError(t, a.Err())
		require.Equal(t, len(ws), a.Len())
		buf, offs := a.packed()
		for i, w := range ws {
			switch w.kind {
			case 0, 2:
				assert.Zero(t, offs[i]%8)
				assert.Equal(t, w.u, binary.LittleEndian.Uint64(buf[offs[i]:]))
				assert.Equal(t, w.u, a.Uint64(i))
			case 1:
				assert.Zero(t, offs[i]%4)
				assert.Equal(t, uint32(w.u), a.Uint32(i))
			case 3:
				assert.Equal(t, w.b, a.Arg(i)[:len(w.b)])
			}
		}
	}
}

func TestArgsErrors(t *testing.T) {
	var a Args
	a.Struct([]byte{1, 2, 3}, 3)
	assert.True(t, errors.Is(a.Err(), gccl.ErrInvalidArgument))
	a.Reset()
	require.NoError(t, a.Err())
	for i := 0; i <= MaxKernelArgs; i++ {
		a.U32(uint32(i))
	}
	assert.True(t, errors.Is(a.Err(), gccl.ErrInvalidArgument))
	assert.Equal(t, MaxKernelArgs, a.Len())
	err := checkLaunch(1, Dim3{1, 1, 1}, Dim3{0, 1, 1}, 0, nil)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument))
	assert.True(t, errors.Is(checkLaunch(0, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil), gccl.ErrInvalidArgument))
	assert.NoError(t, checkLaunch(7, Dim3{2, 1, 1}, Dim3{32, 1, 1}, 0, nil))
}

func TestCallbackTable(t *testing.T) {
	before := pendingCallbacks()
	hits := 0
	h1 := registerCallback(func() { hits++ }, true)
	h2 := registerCallback(func() { hits += 10 }, true)
	assert.NotEqual(t, h1, h2)
	assert.Equal(t, before+2, pendingCallbacks())
	runCallback(h2)
	runCallback(h2) // second call: unknown handle, ignored
	runCallback(h1)
	assert.Equal(t, 11, hits)
	assert.Equal(t, before, pendingCallbacks())
	h3 := registerCallback(func() { panic("boom") }, true)
	assert.NotPanics(t, func() { runCallback(h3) })
	// A lasting handle (a host node of a graph) runs at every call until dropped.
	h4 := registerCallback(func() { hits += 100 }, false)
	for range 3 {
		runCallback(h4)
	}
	assert.Equal(t, 311, hits)
	assert.Equal(t, before+1, pendingCallbacks())
	assert.NotNil(t, takeCallback(h4))
	runCallback(h4) // dropped: ignored
	assert.Equal(t, 311, hits)
	assert.Equal(t, before, pendingCallbacks())
}

func TestPointerAttrSlots(t *testing.T) {
	assert.True(t, PointerDeviceOrdinal.fitsSlot())
	assert.False(t, PointerAttr(5).fitsSlot())
	assert.False(t, PointerAttr(0).fitsSlot())
}
