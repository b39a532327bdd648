package bufreg

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/graph"
	"github.com/gccl/gccl/internal/capture"
)

// RegisterGraph is the collective form of graph registration: every rank
// of c calls it for the same buffer of an operation that every rank is
// capturing (the engine decides that together), and it registers
// [ptr, ptr+size) as RegisterOn does, mapping every peer's buffer, for
// the lifetime of the graph that s is being captured into. The result has
// no handle: it is released when the last operation that holds it (the
// caller must Acquire it and tie the release to the graph, as the engine's
// captured operations do) lets go. Peers is nil when the buffers cannot be
// mapped; operations then stage. On error every rank stages as well: a
// failed registration is an error on every rank (see RegisterOn).
//
// Eager operations do not use graph registrations (LookupNet finds them,
// Registration.Graph tells them apart), and Collective does not count
// them, so the kernels of eager operations are chosen as if they did
// not exist.
func RegisterGraph(c Comm, net Net, ptr uintptr, size int) (*Registration, error) {
	if err := checkComm(c); err != nil {
		return nil, err
	}
	if net == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "net", "nil bootstrap network")
	}
	g := onNet(c, net)
	h, err := register(g, net, ptr, size, true)
	if err != nil {
		return nil, err
	}
	// GCCL_LOCAL_REGISTER does not apply, so h has its registration.
	g.mu.Lock()
	h.reg.Graph, h.reg.handles = true, 0
	g.mu.Unlock()
	return h.reg, nil
}

// ForGraph holds the registration of [ptr, ptr+n) for the lifetime of the
// graph that stream s is being captured into, for an operation of c that
// is being captured. When a local registration (Register) covers the
// buffer it is held until the graph is destroyed, so it cannot be
// deregistered under the graph. Otherwise, with graph registration
// enabled (GCCL_GRAPH_REGISTER / NCCL_GRAPH_REGISTER, on by default), the
// buffer is registered now and deregistered when the graph is destroyed.
//
// It returns ok=false, and holds nothing, when s is not capturing, when c
// is not on a GPU, when graph registration is off and no local
// registration covers the buffer, or when the buffer cannot be registered
// (memory peers cannot map): the operation then runs through staging
// buffers, and Agree with Desc.Fallback set lets every rank fall back
// together.
func ForGraph(c Comm, s gccl.Stream, ptr uintptr, n int) (r *Registration, offset int, ok bool, err error) {
	if err := checkComm(c); err != nil {
		return nil, 0, false, err
	}
	g, isGPU := asGPU(c.Device())
	if !isGPU || ptr == 0 || n <= 0 || ptr+uintptr(n) < ptr {
		return nil, 0, false, nil
	}
	var active bool
	if err := g.Do(func() (err error) { active, _, err = capture.Capturing(g.Driver(), s); return err }); err != nil || !active {
		return nil, 0, false, err
	}
	var release func()
	reg := registryOf(c, true)
	r, offset, found := reg.lookup(ptr, n)
	if found {
		if release, err = r.Acquire(); err != nil {
			return nil, 0, false, err
		}
	} else {
		if !graph.RegisterEnabled() {
			return nil, 0, false, nil
		}
		if r, err = resolve(reg, ptr, n); err != nil {
			return nil, 0, false, nil // not registrable: fall back to copies
		}
		// The new registration's only holder is this use: no handle, so
		// dropping the use releases the registration.
		r.Graph, r.uses, offset = true, 1, 0
		reg.insert(r)
		release = r.holder()
	}
	var retained bool
	err = g.Do(func() (err error) { retained, err = capture.Retain(g.Driver(), s, release); return err })
	if err != nil || !retained {
		release()
		return nil, 0, false, err
	}
	return r, offset, true, nil
}
