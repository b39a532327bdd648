package regcache

import (
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/memalloc"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegisterLookupOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	c := hostComm(t)
	const chunk = 1 << 20
	p, err := memalloc.Alloc(c.dev, chunk)
	require.NoError(t, err)
	defer func() { require.NoError(t, memalloc.Free(p)) }()
	h, err := c.Register(p, chunk)
	require.NoError(t, err)
	reg := h.Registration()
	require.NotNil(t, reg)
	assert.Equal(t, Host, reg.Kind)
	assert.Equal(t, p, reg.Base)
	assert.Equal(t, 0, reg.Offset())

	for range 200 {
		off, n := r.IntN(chunk), 0
		n = r.IntN(chunk - off + 1)
		got, o, ok := c.Lookup(p+uintptr(off), n)
		require.True(t, ok, "sub-buffer [%d, +%d) of the chunk", off, n)
		assert.Same(t, reg, got)
		assert.Equal(t, off, o)
		// A range that runs past the chunk is not registered.
		_, _, ok = c.Lookup(p+uintptr(off), chunk-off+1+r.IntN(100))
		assert.False(t, ok)
	}
	_, _, ok := c.Lookup(p-1, 1)
	assert.False(t, ok, "before the chunk")
	_, _, ok = hostComm(t).Lookup(p, 1)
	assert.False(t, ok, "registrations are per communicator")

	// An inner registration is preferred for buffers inside it.
	h2, err := c.Register(p+4096, 8192)
	require.NoError(t, err)
	got, o, ok := c.Lookup(p+4096+100, 50)
	require.True(t, ok)
	assert.Same(t, h2.Registration(), got)
	assert.Equal(t, 100, o)
	got, o, ok = c.Lookup(p+4096+100, 9000)
	require.True(t, ok)
	assert.Same(t, reg, got, "too long for the inner one")
	assert.Equal(t, 4096+100, o)

	require.NoError(t, Deregister(h2))
	require.NoError(t, Deregister(h))
	_, _, ok = c.Lookup(p, 1)
	assert.False(t, ok, "nothing after deregistration")
	g := c
	g.mu.Lock()
	assert.Empty(t, g.regs, "the communicator's registry is empty")
	g.mu.Unlock()
}

func TestRegisterSharesAndRefcounts(t *testing.T) {
	c := hostComm(t)
	p, err := memalloc.Alloc(c.dev, 8192)
	require.NoError(t, err)
	defer func() { require.NoError(t, memalloc.Free(p)) }()
	a, err := c.Register(p, 8192)
	require.NoError(t, err)
	b, err := c.Register(p, 8192)
	require.NoError(t, err)
	require.Same(t, a.Registration(), b.Registration(), "same range, same registration")

	release, err := a.Registration().Acquire()
	require.NoError(t, err)
	assert.Equal(t, 1, a.Registration().Uses())
	require.NoError(t, Deregister(a), "another handle keeps it alive")
	gccltest.RequireCode(t, Deregister(a), gccl.InvalidUsage)
	gccltest.RequireCode(t, Deregister(b), gccl.InvalidUsage) // last handle, in use
	_, _, ok := c.Lookup(p, 8192)
	assert.True(t, ok, "a refused deregistration leaves it registered")
	release()
	release() // twice is harmless
	assert.Equal(t, 0, b.Registration().Uses())
	require.NoError(t, Deregister(b))
	gccltest.RequireCode(t, Deregister(b), gccl.InvalidUsage)
	_, err = b.Registration().Acquire()
	gccltest.RequireCode(t, err, gccl.InvalidUsage)
}

func TestRegisterMisuse(t *testing.T) {
	c := hostComm(t)
	p, err := memalloc.Alloc(c.dev, 4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, memalloc.Free(p)) }()
	for name, call := range map[string]func() (*Handle, error){
		"nil comm":       func() (*Handle, error) { return (*Cache)(nil).Register(p, 1) },
		"nil device":     func() (*Handle, error) { return New(Owner{}).Register(p, 1) },
		"nil ptr":        func() (*Handle, error) { return c.Register(0, 1) },
		"zero size":      func() (*Handle, error) { return c.Register(p, 0) },
		"negative size":  func() (*Handle, error) { return c.Register(p, -5) },
		"overflow":       func() (*Handle, error) { return c.Register(^uintptr(0)-10, 100) },
		"past the end":   func() (*Handle, error) { return c.Register(p+100, 4096) },
		"go memory":      func() (*Handle, error) { b := make([]byte, 64); return c.Register(uintptr(len(b))<<20, 64) },
		"host on no gpu": func() (*Handle, error) { return c.Register(p-4096*1024, 16) },
	} {
		h, err := call()
		assert.Nil(t, h, name)
		gccltest.RequireCode(t, err, gccl.InvalidArgument)
	}
	gccltest.RequireCode(t, Deregister(nil), gccl.InvalidArgument)
	_, err = (*Registration)(nil).Acquire()
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
}

func TestRegisterDisabled(t *testing.T) {
	setEnv(t, "NCCL_LOCAL_REGISTER", "0")
	c := hostComm(t)
	p, err := memalloc.Alloc(c.dev, 4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, memalloc.Free(p)) }()
	h, err := c.Register(p, 4096)
	require.NoError(t, err)
	assert.Nil(t, h.Registration())
	_, _, ok := c.Lookup(p, 1)
	assert.False(t, ok)
	_, err = c.Register(0, 4096)
	gccltest.RequireCode(t, err, gccl.InvalidArgument) // arguments are still checked
	require.NoError(t, Deregister(h))
	gccltest.RequireCode(t, Deregister(h), gccl.InvalidUsage)
}

func TestCloseReleasesAll(t *testing.T) {
	c, _ := fakeComm(t)
	p, err := memalloc.Alloc(c.dev, 1000)
	require.NoError(t, err)
	var hs []*Handle
	for i := range 5 {
		h, err := c.Register(p+uintptr(100*i), 50)
		require.NoError(t, err)
		hs = append(hs, h)
	}
	_, err = hs[0].Registration().Acquire()
	require.NoError(t, err)
	require.NoError(t, c.Close())
	for _, h := range hs {
		gccltest.RequireCode(t, Deregister(h), gccl.InvalidUsage)
	}
	_, _, ok := c.Lookup(p, 1)
	assert.False(t, ok)
	require.NoError(t, memalloc.Free(p))
	require.NoError(t, c.Close(), "nothing left")
}

func TestRegisterGPUKinds(t *testing.T) {
	c, f := fakeComm(t)
	g, _ := memalloc.AsGPU(c.dev)
	p, err := memalloc.Alloc(c.dev, 3<<20)
	require.NoError(t, err)
	h, err := c.Register(p+1000, 5000)
	require.NoError(t, err)
	reg := h.Registration()
	assert.Equal(t, VMM, reg.Kind)
	assert.Equal(t, p, reg.AllocBase)
	assert.Equal(t, 1000, reg.Offset())
	n, _ := memalloc.Size(p)
	assert.Equal(t, n, reg.AllocSize)

	q, err := c.dev.Alloc(10000) // cuMemAlloc memory
	require.NoError(t, err)
	hq, err := c.Register(q+16, 9000)
	require.NoError(t, err)
	assert.Equal(t, Legacy, hq.Registration().Kind)
	assert.Equal(t, 16, hq.Registration().Offset())
	_, err = c.Register(q+16, 10000)
	gccltest.RequireCode(t, err, gccl.InvalidArgument) // past the allocation

	// Memory of another GPU, and host memory, are refused.
	other := gpuComm(t, f, 1)
	o, err := other.dev.Alloc(100)
	require.NoError(t, err)
	_, err = c.Register(o, 100)
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	var hostp uintptr
	require.NoError(t, g.Do(func() (err error) { hostp, err = f.MemHostAlloc(4096, 0); return err }))
	_, err = c.Register(hostp, 100)
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	require.NoError(t, g.Do(func() error { return f.MemFreeHost(hostp) }))

	require.NoError(t, Deregister(h))
	require.NoError(t, Deregister(hq))
	require.NoError(t, memalloc.Free(p))
	require.NoError(t, c.dev.Free(q))
	require.NoError(t, other.dev.Free(o))
	_ = device.Host
}

func TestRegistryConcurrent(t *testing.T) {
	c := hostComm(t)
	p, err := memalloc.Alloc(c.dev, 1<<16)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 99))
			for range 200 {
				// Each worker uses its own quarter, so only it holds its
				// registrations and its Deregister never meets a use.
				off := uintptr(w<<14 + r.IntN(1<<13))
				h, err := c.Register(p+off, 1+r.IntN(1<<13))
				if !assert.NoError(t, err) {
					return
				}
				reg, o, ok := c.Lookup(p+off, 1)
				if assert.True(t, ok) && assert.Equal(t, p+off, reg.Base+uintptr(o)) {
					if release, err := reg.Acquire(); err == nil {
						release()
					}
				}
				assert.NoError(t, Deregister(h))
			}
		})
	}
	wg.Wait()
	_, _, ok := c.Lookup(p, 1)
	assert.False(t, ok)
	require.NoError(t, memalloc.Free(p))
}
