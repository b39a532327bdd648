package regcache

import (
	"github.com/gccl/gccl"
)

// RegisterGraph is graph registration (GCCL_GRAPH_REGISTER): every rank
// calls it for the same buffer of an operation that every rank is
// capturing (the engine decides that together), and it registers
// [ptr, ptr+size) as a collective Register does, mapping every peer's
// buffer, for the lifetime of the graph being captured. The result has
// no handle: it is released when the last operation that holds it (the
// caller must Acquire it and tie the release to the graph, as the engine's
// captured operations do) lets go. Peers is nil when the buffers cannot be
// mapped; operations then stage. On error every rank stages as well: a
// failed registration is an error on every rank (see register).
//
// Eager operations do not use graph registrations (Lookup finds them,
// Registration.Graph tells them apart), and Collective does not count
// them, so the kernels of eager operations are chosen as if they did
// not exist.
func (g *Cache) RegisterGraph(ptr uintptr, size int) (*Registration, error) {
	if g == nil || g.dev == nil || g.net == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "graph registration needs a communicator with a bootstrap network")
	}
	h, err := g.register(ptr, size, true)
	if err != nil {
		return nil, err
	}
	// GCCL_LOCAL_REGISTER does not apply, so h has its registration.
	g.mu.Lock()
	h.reg.Graph, h.reg.handles = true, 0
	g.mu.Unlock()
	return h.reg, nil
}
