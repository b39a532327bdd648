package bufreg

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// captured runs body while c's stream s is captured and returns the graph.
func captured(t *testing.T, c *testComm, s gccl.Stream, body func()) cuda.Graph {
	g, _ := asGPU(c.dev)
	require.NoError(t, g.Driver().StreamBeginCapture(cuda.Stream(s), cuda.CaptureModeThreadLocal))
	body()
	gr, err := g.Driver().StreamEndCapture(cuda.Stream(s))
	require.NoError(t, err)
	return gr
}

func TestForGraphRegistersForGraphLifetime(t *testing.T) {
	c, f := fakeComm(t)
	s, err := c.dev.NewStream()
	require.NoError(t, err)
	p, err := MemAlloc(c.dev, 1<<20)
	require.NoError(t, err)

	_, _, ok, err := ForGraph(c, s, p, 100)
	require.NoError(t, err)
	assert.False(t, ok, "not capturing")

	var first *Registration
	gr := captured(t, c, s, func() {
		r, off, ok, err := ForGraph(c, s, p+64, 100)
		require.NoError(t, err)
		require.True(t, ok)
		assert.True(t, r.Graph)
		assert.Equal(t, VMM, r.Kind)
		assert.Equal(t, 0, off)
		first = r
		// A second operation in the same capture reuses it.
		r2, off2, ok, err := ForGraph(c, s, p+64+10, 20)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Same(t, r, r2)
		assert.Equal(t, 10, off2)
	})
	assert.Equal(t, 2, first.Uses())
	_, _, found := Lookup(c, p+64, 100)
	assert.True(t, found, "registered while the graph lives")
	requireCode(t, MemFree(p), gccl.InvalidUsage)

	e, err := f.GraphInstantiate(gr)
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(gr))
	_, _, found = Lookup(c, p+64, 100)
	assert.True(t, found, "the executable graph still uses it")
	require.NoError(t, f.GraphExecDestroy(e))
	eventually(t, "graph registration released", func() bool { _, _, ok := Lookup(c, p+64, 100); return !ok })
	require.NoError(t, MemFree(p))
	require.NoError(t, c.dev.DestroyStream(s))
}

func TestForGraphHoldsLocalRegistration(t *testing.T) {
	c, f := fakeComm(t)
	s, err := c.dev.NewStream()
	require.NoError(t, err)
	p, err := MemAlloc(c.dev, 4096)
	require.NoError(t, err)
	h, err := Register(c, p, 4096)
	require.NoError(t, err)
	gr := captured(t, c, s, func() {
		r, off, ok, err := ForGraph(c, s, p+128, 256)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Same(t, h.Registration(), r)
		assert.Equal(t, 128, off)
	})
	requireCode(t, Deregister(h), gccl.InvalidUsage) // the graph uses it
	require.NoError(t, f.GraphDestroy(gr))
	eventually(t, "graph use dropped", func() bool { return h.Registration().Uses() == 0 })
	require.NoError(t, Deregister(h))
	require.NoError(t, MemFree(p))
}

func TestForGraphDisabledAndHost(t *testing.T) {
	setEnv(t, "GCCL_GRAPH_REGISTER", "0")
	c, f := fakeComm(t)
	s, err := c.dev.NewStream()
	require.NoError(t, err)
	p, err := MemAlloc(c.dev, 4096)
	require.NoError(t, err)
	gr := captured(t, c, s, func() {
		_, _, ok, err := ForGraph(c, s, p, 100)
		require.NoError(t, err)
		assert.False(t, ok, "graph registration off")
	})
	require.NoError(t, f.GraphDestroy(gr))
	require.NoError(t, MemFree(p))

	hc := hostComm(t)
	_, _, ok, err := ForGraph(hc, 0, 4096, 100)
	require.NoError(t, err)
	assert.False(t, ok, "no graphs on the host backend")
	_, _, _, err = ForGraph(nil, 0, 1, 1)
	requireCode(t, err, gccl.InvalidArgument)
}
