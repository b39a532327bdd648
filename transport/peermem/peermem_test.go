package peermem

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOfferRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		o := Offer{PID: int64(rng.Uint64()), HostHash: rng.Uint64(), Ordinal: int32(rng.Uint32()), Ptr: uintptr(rng.Uint64()), Size: rng.Uint64()}
		for i := range o.Handle {
			o.Handle[i] = byte(rng.Uint32())
		}
		b, err := o.MarshalBinary()
		require.NoError(t, err)
		require.Len(t, b, OfferBytes)
		var got Offer
		require.NoError(t, got.UnmarshalBinary(b))
		assert.Equal(t, o, got)
		for _, bad := range [][]byte{b[:len(b)-1], append(b, 0), append([]byte{1}, b[1:]...), nil} {
			err := got.UnmarshalBinary(bad)
			assert.True(t, errors.Is(err, gccl.ErrRemote), "%v", err)
		}
	}
}

// TestOpenInProcess maps two fake GPUs' buffers in one process: the own
// buffer and a same-process peer on another GPU use the raw pointer (the
// latter after enabling peer access), a peer in "another process" is
// opened through its IPC handle.
func TestOpenInProcess(t *testing.T) {
	f := cudafake.New(cudafake.Config{Devices: 2})
	ctx := make([]cuda.Context, 2)
	bufs := make([]uintptr, 2)
	offers := make([]Offer, 3)
	for i := range 2 {
		dev, err := f.DeviceGet(i)
		require.NoError(t, err)
		ctx[i], err = f.PrimaryCtxRetain(dev)
		require.NoError(t, err)
		require.NoError(t, f.CtxSetCurrent(ctx[i]))
		bufs[i], err = f.MemAlloc(4096)
		require.NoError(t, err)
		defer func() { assert.NoError(t, f.MemFree(bufs[i])) }()
		offers[i], err = NewOffer(f, i, 77, bufs[i], 4096)
		require.NoError(t, err)
	}
	offers[2] = offers[1]
	offers[2].PID = int64(os.Getpid()) + 1 // as if from another process
	require.NoError(t, f.CtxSetCurrent(ctx[0]))
	m, err := Open(f, 0, offers)
	require.NoError(t, err)
	assert.Equal(t, bufs[0], m.Ptrs[0])
	assert.Equal(t, bufs[1], m.Ptrs[1])
	assert.NotZero(t, m.Ptrs[2])
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())

	offers[1].HostHash = 78
	_, err = Open(f, 0, offers)
	assert.True(t, errors.Is(err, gccl.ErrInvalidUsage), "%v", err)
	_, err = Open(f, 3, offers)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument), "%v", err)
	_, err = NewOffer(f, 0, 77, 0, 10)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument), "%v", err)
}

// onceIPC is a fake driver whose IPC handles map once per process, as the
// real driver's do (a second open: CUDA_ERROR_ALREADY_MAPPED).
type onceIPC struct {
	*cudafake.Fake
	open map[cuda.IpcMemHandle]bool
}

func (d *onceIPC) IpcOpenMemHandle(h cuda.IpcMemHandle, flags uint32) (uintptr, error) {
	if d.open[h] {
		return 0, errors.New("CUDA_ERROR_ALREADY_MAPPED")
	}
	p, err := d.Fake.IpcOpenMemHandle(h, flags)
	if err == nil {
		d.open[h] = true
	}
	return p, err
}

func (d *onceIPC) IpcCloseMemHandle(p uintptr) error {
	for h := range d.open {
		delete(d.open, h) // one handle in this test
	}
	return d.Fake.IpcCloseMemHandle(p)
}

// TestTwoRanksOneProcessMapOnePeer: two ranks of this process on one GPU
// map the same peer of another process; the mapping is shared, and
// unmapped only when the last of them closes.
func TestTwoRanksOneProcessMapOnePeer(t *testing.T) {
	d := &onceIPC{Fake: cudafake.New(cudafake.Config{}), open: map[cuda.IpcMemHandle]bool{}}
	dev, err := d.DeviceGet(0)
	require.NoError(t, err)
	ctx, err := d.PrimaryCtxRetain(dev)
	require.NoError(t, err)
	require.NoError(t, d.CtxSetCurrent(ctx))
	bufs := make([]uintptr, 3)
	offers := make([]Offer, 3)
	for r := range bufs {
		bufs[r], err = d.MemAlloc(4096)
		require.NoError(t, err)
		defer func() { assert.NoError(t, d.MemFree(bufs[r])) }()
		offers[r], err = NewOffer(d, 0, 77, bufs[r], 4096)
		require.NoError(t, err)
	}
	offers[2].PID = int64(os.Getpid()) + 1 // rank 2 is in another process
	a, err := Open(d, 0, offers)
	require.NoError(t, err)
	b, err := Open(d, 1, offers)
	require.NoError(t, err, "the second rank of this process maps the same peer")
	assert.Equal(t, a.Ptrs[2], b.Ptrs[2])
	require.NoError(t, a.Close())
	assert.True(t, d.open[offers[2].Handle], "unmapped while rank 1 still uses it")
	require.NoError(t, b.Close())
	assert.False(t, d.open[offers[2].Handle])
}
