package device

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/hoststream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestAllocCopyRoundTrip(t *testing.T) {
	d, err := Open(Host, 0)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 7, 4095, 4096, 4097, 1<<20 + 3} {
		p, err := d.Alloc(n)
		require.NoError(t, err)
		require.NotZero(t, p)
		require.Zero(t, p%4096, "allocations are page aligned")
		want := randBytes(rng, n)
		require.NoError(t, d.CopyIn(p, want))
		got := randBytes(rng, n) // poisoned
		require.NoError(t, d.CopyOut(got, p))
		require.True(t, bytes.Equal(want, got), "size %d", n)
		require.True(t, bytes.Equal(want, HostBytes(p, n)), "size %d", n)

		if n > 2 {
			require.NoError(t, Memset(d, p+1, 0xa5, n-2))
			require.NoError(t, d.CopyOut(got, p))
			assert.Equal(t, want[0], got[0])
			assert.Equal(t, want[n-1], got[n-1])
			assert.Equal(t, bytes.Repeat([]byte{0xa5}, n-2), got[1:n-1])
		}
		require.NoError(t, d.Free(p))
	}
}

func TestMemsetFallbackUsesCopyIn(t *testing.T) {
	host, _ := NewHost(0, 0)
	d := fakeGPU{host} // hides the host device's Memset method
	p, err := d.Alloc(100)
	require.NoError(t, err)
	defer d.Free(p)
	require.NoError(t, Memset(d, p, 0x3c, 100))
	assert.Equal(t, bytes.Repeat([]byte{0x3c}, 100), HostBytes(p, 100))
	requireArg(t, Memset(d, p, 0, -1), gccl.ErrInvalidArgument, "n")
	requireArg(t, Memset(nil, p, 0, 1), gccl.ErrInvalidArgument, "device")
}

func TestForeignGoMemoryWorksAsBuffer(t *testing.T) {
	d, _ := Open(Host, 0)
	buf := make([]byte, 64)
	p := uintptr(unsafe.Pointer(&buf[0]))
	require.NoError(t, d.CopyIn(p+8, []byte("gccl")))
	assert.Equal(t, "gccl", string(buf[8:12]))
	_, ok := HostRegionOf(p)
	assert.False(t, ok)
}

func TestFreeErrors(t *testing.T) {
	d, _ := Open(Host, 0)
	require.NoError(t, d.Free(0))
	buf := make([]byte, 64)
	requireArg(t, d.Free(uintptr(unsafe.Pointer(&buf[0]))), gccl.ErrInvalidArgument, "p")

	p, err := d.Alloc(10000)
	require.NoError(t, err)
	requireArg(t, d.Free(p+16), gccl.ErrInvalidArgument, "p")
	require.NoError(t, d.Free(p))
	requireArg(t, d.Free(p), gccl.ErrInvalidUsage, "p")
}

func TestCopyBoundsAndNil(t *testing.T) {
	d, _ := Open(Host, 0)
	p, err := d.Alloc(4096)
	require.NoError(t, err)
	defer d.Free(p)
	requireArg(t, d.CopyIn(p+4000, make([]byte, 97)), gccl.ErrInvalidArgument, "dst")
	requireArg(t, d.CopyOut(make([]byte, 4097), p), gccl.ErrInvalidArgument, "src")
	requireArg(t, d.CopyIn(0, []byte{1}), gccl.ErrInvalidArgument, "dst")
	requireArg(t, d.CopyOut([]byte{1}, 0), gccl.ErrInvalidArgument, "src")
	requireArg(t, Memset(d, p, 1, 4097), gccl.ErrInvalidArgument, "p")
	require.NoError(t, d.CopyIn(p+4000, make([]byte, 96)))
	_, err = d.Alloc(-1)
	requireArg(t, err, gccl.ErrInvalidArgument, "size")
	assert.Nil(t, HostBytes(0, 5))
	assert.Nil(t, HostBytes(p, 0))
}

func TestStreams(t *testing.T) {
	d, _ := NewHost(0, 50*time.Millisecond)
	s, err := d.NewStream()
	require.NoError(t, err)
	require.NotZero(t, s)
	hs, err := hoststream.Lookup(0, s)
	require.NoError(t, err)

	release := make(chan struct{})
	ran := false
	require.NoError(t, hs.Enqueue(func() error { <-release; ran = true; return nil }))
	done, err := d.Query(s)
	require.NoError(t, err)
	assert.False(t, done)
	require.ErrorIs(t, d.Synchronize(s), gccl.ErrTimeout, "the device's deadline bounds Synchronize")
	close(release)
	require.Eventually(t, func() bool { done, _ := d.Query(s); return done }, 5*time.Second, time.Millisecond)
	require.NoError(t, d.Synchronize(s))
	assert.True(t, ran)

	require.NoError(t, d.DestroyStream(s))
	requireArg(t, d.DestroyStream(s), gccl.ErrInvalidArgument, "stream")
	requireArg(t, d.Synchronize(s), gccl.ErrInvalidArgument, "stream")
	_, err = d.Query(s)
	requireArg(t, err, gccl.ErrInvalidArgument, "stream")
	require.NoError(t, d.Synchronize(0), "0 is the default stream")
}
