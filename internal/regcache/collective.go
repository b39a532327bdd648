package regcache

import (
	"context"
	"fmt"
	"github.com/gccl/gccl/internal/fdpass"
	"os"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/transport/topo"
)

// Net is a communicator's all-gather of small messages among its ranks
// (internal/bootstrap.Net). Registration through a Net is collective.
type Net interface {
	AllGather(ctx context.Context, b []byte) ([][]byte, error)
}

// Peer is one rank's buffer of a collective registration as this rank
// addresses it.
type Peer struct {
	Ptr uintptr // the rank's registered buffer mapped on this rank's device (own: Base)
	Len int     // its registered length
}

// register is Register on a communicator with a Net: every rank calls it,
// with its own pointer and size, in the same order relative to the other
// collective calls of the communicator. The ranks exchange what their
// buffers are (CUDA IPC handles, cuMem file descriptors, host region
// names) and each maps every peer's buffer once, so that operations on
// registered sub-buffers read and write peers' memory directly. A cuMem
// descriptor reaches a rank of another process of the same host over a
// Unix domain socket (internal/fdpass). Each call makes a new registration
// (Registration.Seq numbers them the same on every rank). When a rank's
// buffer cannot be registered, or a rank fails to map a peer's, every rank
// gets an error; when the buffers cannot be mapped at all (ranks on
// different hosts, or a cuMem descriptor that no peer process could
// fetch), the registration is kept but Peers is nil on every rank, and
// operations stage through the communication buffers.
//
// With graph set it is RegisterGraph's registration: GCCL_LOCAL_REGISTER
// does not apply and the call is counted as a graph registration.
func (g *Cache) register(ptr uintptr, size int, graph bool) (*Handle, error) {
	seq := g.nextSeq(graph)
	var r *Registration
	var err error
	switch {
	case ptr == 0:
		err = gccl.Errorf(gccl.InvalidArgument, "ptr", "nil buffer; pass memory from MemAlloc or Device.Alloc")
	case size <= 0 || ptr+uintptr(size) < ptr:
		err = gccl.Errorf(gccl.InvalidArgument, "size", "cannot register %d bytes at %#x", size, ptr)
	case !graph && !env.Get().LocalRegister:
	default:
		if r, err = resolve(g, ptr, size); err == nil {
			r.handles = 1 // its own until inserted, so shareDesc's hold does not release it
		}
	}
	h, err := registerOn(g, r, seq, err)
	if err != nil && r != nil {
		_ = r.release()
	}
	return h, err
}

// registerOn is register after resolving: r is this rank's registration
// (nil when it failed with failed, or when registration is disabled).
func registerOn(c *Cache, r *Registration, seq uint64, failed error) (*Handle, error) {
	net := c.net
	ctx, cancel := context.WithTimeout(context.Background(), env.Get().Timeout)
	defer cancel()
	mine, exp, srv := describe(ctx, c, r, seq, failed)
	defer exp.Close()
	defer srv.Close() // before exp.Close: the server hands out exp.FD
	all, err := exchange(ctx, net, mine, c)
	if err != nil {
		return nil, err
	}
	srv.Expect(fetchers(c, all))
	if failed != nil {
		return nil, failed
	}
	if bad := firstFailed(all); bad >= 0 {
		return nil, gccl.Errorf(gccl.InvalidUsage, fmt.Sprintf("rank %d", bad),
			"rank %d could not register its buffer (%s); every rank's Register of this call fails", bad, all[bad].Msg)
	}
	if !all[c.Rank()].Registered {
		return &Handle{owner: c}, nil // GCCL_LOCAL_REGISTER=0 (on this rank; see agreeDisabled)
	}
	if dis := firstDisabled(all); dis >= 0 {
		return nil, gccl.Errorf(gccl.InvalidUsage, fmt.Sprintf("rank %d", dis),
			"rank %d has local registration disabled (GCCL_LOCAL_REGISTER=0) but this rank has not; set it alike on every rank", dis)
	}
	r.Seq, r.net = seq, net
	if err := mapPeers(ctx, net, c, r, all); err != nil {
		return nil, err
	}
	c.insert(r)
	return &Handle{owner: c, reg: r}, nil
}

// nextSeq counts a collective registration (graph: by RegisterGraph).
func (g *Cache) nextSeq(graph bool) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	if !graph {
		g.plain.Add(1)
	}
	return g.seq
}

// exchange all-gathers the ranks' entries and decodes them.
func exchange(ctx context.Context, net Net, mine entry, c *Cache) ([]entry, error) {
	raw, err := net.AllGather(ctx, mine.marshal())
	if err != nil {
		return nil, gccl.Errorf(gccl.Code(err), "comm", "exchanging buffer registrations: %w", err)
	}
	if len(raw) != c.Count() {
		return nil, gccl.Errorf(gccl.InternalError, "comm", "registration all-gather returned %d entries for %d ranks", len(raw), c.Count())
	}
	all := make([]entry, len(raw))
	for i, b := range raw {
		if err := all[i].unmarshal(b); err != nil {
			return nil, gccl.Errorf(gccl.RemoteError, fmt.Sprintf("rank %d", i), "registration entry: %w", err)
		}
		if all[i].Seq != mine.Seq {
			return nil, gccl.Errorf(gccl.InvalidUsage, fmt.Sprintf("rank %d", i),
				"rank %d is at its registration %d but this rank at %d; every rank must call Register the same number of times, in the same order", i, all[i].Seq, mine.Seq)
		}
	}
	return all, nil
}

// describe makes this rank's entry; exp holds a cuMem file descriptor the
// entry names until the peers have mapped it, and srv serves it to the
// peers of other processes (both nil for other kinds).
func describe(ctx context.Context, c *Cache, r *Registration, seq uint64, failed error) (e entry, _ *shareDesc, _ *fdpass.Server) {
	e = entry{Seq: seq, PID: int64(os.Getpid()), Host: topo.HostHash()}
	defer func() {
		if testEntryHook != nil {
			testEntryHook(c, &e) // the result: runs after return sets it
		}
	}()
	if failed != nil {
		e.Msg = failed.Error()
		return e, nil, nil
	}
	if r == nil {
		return e, nil, nil // registration disabled on this rank
	}
	x, err := r.share()
	if err != nil {
		e.Msg = err.Error()
		return e, nil, nil
	}
	var srv *fdpass.Server
	if x.Kind == VMM && c.Count() > 1 {
		// Without a socket (err) peers of other processes cannot fetch the
		// descriptor and every rank stages; those of this one still map.
		if srv, err = fdpass.Serve(ctx, x.FD, c.Count()-1); err == nil {
			e.Sock, e.Token = srv.Name, srv.Token
		}
	}
	e.Registered, e.Kind, e.Base, e.Size, e.Offset, e.Len = true, x.Kind, r.Base, x.Size, x.Offset, x.Len
	e.IPC, e.Region, e.FD = x.IPC, x.Region, int32(x.FD)
	if g, ok := memalloc.AsGPU(r.owner.dev); ok {
		e.Ordinal = int32(g.Ordinal())
	}
	return e, &x, srv
}

// testEntryHook, when a test sets it, edits each rank's entry before the
// exchange (to make goroutine ranks look like separate processes).
var testEntryHook func(c *Cache, e *entry)

// fetchers counts the peers that will fetch this rank's cuMem descriptor
// over its socket: those of another process, when the registration maps.
func fetchers(c *Cache, all []entry) int {
	me := c.Rank()
	if _, ok := memalloc.AsGPU(c.Device()); !ok || !mappable(all) || firstFailed(all) >= 0 || firstDisabled(all) >= 0 {
		return 0
	}
	n := 0
	for p, e := range all {
		if p != me && e.PID != all[me].PID {
			n++
		}
	}
	return n
}

func firstFailed(all []entry) int {
	for i, e := range all {
		if e.Msg != "" {
			return i
		}
	}
	return -1
}

func firstDisabled(all []entry) int {
	for i, e := range all {
		if !e.Registered {
			return i
		}
	}
	return -1
}

// mapPeers maps every peer's buffer when every pair of ranks can, and
// agrees with the peers on the outcome so that Peers is set on every rank
// or on none. A rank that could not fetch a peer's cuMem descriptor (its
// socket unreachable, as between network namespaces) makes every rank
// stage (Peers nil, no error); any other failure to map fails the call on
// every rank.
func mapPeers(ctx context.Context, net Net, c *Cache, r *Registration, all []entry) error {
	me := c.Rank()
	g, isGPU := memalloc.AsGPU(c.Device())
	if !isGPU || !mappable(all) {
		return nil // host memory (the host engine maps it itself) or no way to map: stage
	}
	peers, unreached, mapErr := r.mapAll(ctx, g, me, all)
	// The verdict: Msg empty when every peer is mapped; Unreached when the
	// failure is only an unreachable descriptor socket.
	mine := entry{Seq: r.Seq, PID: all[me].PID, Unreached: unreached}
	if mapErr != nil {
		mine.Msg = mapErr.Error()
	}
	agreed, err := exchange(ctx, net, mine, c)
	if err != nil {
		r.unmapPeers()
		return err
	}
	hard, soft := -1, -1
	for i, v := range agreed {
		switch {
		case v.Msg == "":
		case v.Unreached && soft < 0:
			soft = i
		case !v.Unreached && hard < 0:
			hard = i
		}
	}
	switch {
	case hard >= 0 && mapErr != nil && !unreached:
		err = mapErr
	case hard >= 0:
		err = gccl.Errorf(gccl.InvalidUsage, fmt.Sprintf("rank %d", hard), "rank %d could not map the peers' registered buffers: %s", hard, agreed[hard].Msg)
	case soft >= 0:
		return r.unmapPeers() // stage: no rank keeps Peers
	default:
		r.Peers = peers
		return nil
	}
	r.unmapPeers()
	return err
}

// mapAll maps every peer's buffer on g, stopping at the first failure;
// unreached says that failure was fetching a peer's descriptor.
func (r *Registration) mapAll(ctx context.Context, g memalloc.GPU, me int, all []entry) (peers []Peer, unreached bool, err error) {
	peers = make([]Peer, len(all))
	for p, e := range all {
		if p == me {
			peers[p] = Peer{Ptr: r.Base, Len: r.Size}
			continue
		}
		m, unreached, err := mapPeer(ctx, g, me, all, p)
		if err != nil {
			return nil, unreached, gccl.Errorf(gccl.Code(err), fmt.Sprintf("rank %d", p), "mapping rank %d's registered buffer: %w", p, err)
		}
		if m.unmap != nil {
			r.mapped = append(r.mapped, m)
		}
		peers[p] = Peer{Ptr: m.Ptr, Len: e.Len}
	}
	return peers, false, nil
}

// mappable reports whether every rank can map every other rank's buffer:
// GPU memory (cuMem descriptors passed over a Unix socket, CUDA IPC
// handles) is shared only among the ranks of one host.
func mappable(all []entry) bool {
	for _, e := range all {
		if e.Kind == Host || e.Host != all[0].Host {
			return false
		}
	}
	return len(all) > 0
}

// mapPeer maps rank p's buffer on g by importing its export. A cuMem peer
// in another process hands its file descriptor over its socket first. A
// peer in this process whose CUDA IPC handle cannot be opened here (the
// driver refuses a process its own handles) is addressed by its pointer,
// which the engine's peer access makes valid on this device.
func mapPeer(ctx context.Context, g memalloc.GPU, me int, all []entry, p int) (m *mappedPeer, unreached bool, err error) {
	e := all[p]
	x := shareDesc{Kind: e.Kind, Size: e.Size, Offset: e.Offset, Len: e.Len, IPC: e.IPC, Region: e.Region, FD: int(e.FD)}
	if e.Kind == VMM && e.PID != all[me].PID {
		if x.FD, err = fdpass.Fetch(ctx, e.Sock, e.Token); err != nil {
			return nil, ctx.Err() == nil, err
		}
		defer x.Close() // the import holds the memory
	}
	m, err = mapShared(g, x)
	if err != nil && e.PID == all[me].PID && e.Kind == Legacy {
		return &mappedPeer{Ptr: e.Base, Len: e.Len}, false, nil
	}
	return m, false, err
}

// unmapPeers closes r's peer mappings.
func (r *Registration) unmapPeers() error {
	var first error
	for _, m := range r.mapped {
		first = firstErr(first, m.Close())
	}
	r.mapped = nil
	return first
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Collective reports how many collective Register calls were made (graph
// registrations not counted): the same number on every rank between two
// operations, since Register is collective. A nil Cache has made none.
func (g *Cache) Collective() uint64 {
	if g == nil {
		return 0
	}
	return g.plain.Load()
}
