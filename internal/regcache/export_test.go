package regcache

import (
	"bytes"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/internal/nettest"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTrip registers [p+off, p+off+n) on owner, exports it, maps it on
// peer and checks that bytes written by the owner are read by the peer
// and the other way round, with no copy in between.
func roundTrip(t *testing.T, r *rand.Rand, owner, peer *Cache, p uintptr, off, n int, want Kind) {
	h, err := owner.Register(p+uintptr(off), n)
	require.NoError(t, err)
	e, err := h.Registration().share()
	require.NoError(t, err)
	assert.Equal(t, want, e.Kind)
	assert.Equal(t, n, e.Len)
	m, err := mapShared(peer.dev, e)
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.NoError(t, e.Close())

	data := nettest.RandBytes(r, n)
	require.NoError(t, owner.dev.CopyIn(p+uintptr(off), data))
	got := make([]byte, n)
	require.NoError(t, peer.dev.CopyOut(got, m.Ptr))
	require.True(t, bytes.Equal(data, got), "peer reads the owner's bytes")
	back := nettest.RandBytes(r, n)
	require.NoError(t, peer.dev.CopyIn(m.Ptr, back))
	require.NoError(t, owner.dev.CopyOut(got, p+uintptr(off)))
	require.True(t, bytes.Equal(back, got), "owner reads the peer's bytes")

	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	require.NoError(t, Deregister(h))
}

func TestExportImport(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	t.Run("host", func(t *testing.T) {
		a, b := hostComm(t), hostComm(t)
		p, err := memalloc.Alloc(a.dev, 1<<16)
		require.NoError(t, err)
		roundTrip(t, r, a, b, p, r.IntN(1<<15), 1+r.IntN(1<<15), Host)
		require.NoError(t, memalloc.Free(p))
	})
	t.Run("vmm", func(t *testing.T) {
		a, f := fakeComm(t)
		b := gpuComm(t, f, 1)
		p, err := memalloc.Alloc(a.dev, 1<<20)
		require.NoError(t, err)
		roundTrip(t, r, a, b, p, r.IntN(1<<19), 1+r.IntN(1<<19), VMM)
		require.NoError(t, memalloc.Free(p))
	})
	t.Run("legacy", func(t *testing.T) {
		a, f := fakeComm(t)
		b := gpuComm(t, f, 1)
		p, err := a.dev.Alloc(1 << 16)
		require.NoError(t, err)
		roundTrip(t, r, a, b, p, r.IntN(1<<15), 1+r.IntN(1<<15), Legacy)
		require.NoError(t, a.dev.Free(p))
	})
}

func TestImportMisuse(t *testing.T) {
	h := hostComm(t)
	g, _ := fakeComm(t)
	_, err := mapShared(nil, shareDesc{Kind: Host, Size: 10, Len: 1})
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	_, err = mapShared(h.dev, shareDesc{Kind: Host, Size: 10, Offset: 5, Len: 6})
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	_, err = mapShared(g.dev, shareDesc{Kind: Host, Size: 10, Len: 1})
	gccltest.RequireCode(t, err, gccl.InvalidUsage) // backends differ
	_, err = mapShared(h.dev, shareDesc{Kind: VMM, Size: 10, Len: 1})
	gccltest.RequireCode(t, err, gccl.InvalidUsage)
	_, err = mapShared(h.dev, shareDesc{Kind: Host, Size: 10, Len: 1, Region: "/etc/passwd"})
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	_, err = (*Registration)(nil).share()
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	require.NoError(t, (*mappedPeer)(nil).Close())
	_ = device.Host
}
