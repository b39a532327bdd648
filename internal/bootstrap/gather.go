package bootstrap

import (
	"context"
	"encoding/binary"
	"strings"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

// AllGather sends mine to every rank and returns every rank's contribution,
// indexed by rank. Contributions may differ in length, up to MaxMessage.
//
// It runs over a binomial tree rooted at rank 0: the parent of rank r is r
// with its lowest set bit cleared, so its subtree is the ranks [r, r+low(r)).
// Each rank gathers its children's subtrees, hands its own subtree to its
// parent, then receives everything else from it and passes down to each
// child what the child lacks: 2·log2(n) message hops, 2(n-1) messages, and
// the tree's n-1 edges are the only connections it needs (a child dials its
// parent; for odd ranks that is the ring connection Init made). Recursive
// doubling would take log2(n) hops but n·log2(n)/2 connections, each an
// authenticated handshake: at 1024 ranks, ten times the connections.
func (n *Net) AllGather(ctx context.Context, mine []byte) ([][]byte, error) {
	if err := n.usable(); err != nil {
		return nil, err
	}
	if len(mine) > MaxMessage {
		return nil, gccl.Errorf(gccl.InvalidArgument, "data", "%d bytes exceed the bootstrap message limit of %d", len(mine), MaxMessage)
	}
	ctx, cancel := withDeadline(ctx, n.timeout)
	defer cancel()
	g := &gather{n: n, tag: n.seq.Add(1), all: make([][]byte, n.nranks), have: make([]bool, n.nranks)}
	g.add(n.rank, append([]byte{}, mine...))
	if err := g.run(ctx); err != nil {
		return nil, err
	}
	return g.all, nil
}

// Barrier returns once every rank has entered it.
func (n *Net) Barrier(ctx context.Context) error {
	_, err := n.AllGather(ctx, nil)
	return err
}

// gather is one rank's state in one AllGather.
type gather struct {
	n    *Net
	tag  uint64
	all  [][]byte
	have []bool
	held []int // the ranks whose contributions this rank holds, in arrival order

	sentUp   bool // the parent has this rank's subtree
	sentDown int  // how many children (largest subtree first) have their streams
}

func (g *gather) add(r int, b []byte) {
	g.all[r], g.have[r] = b, true
	g.held = append(g.held, r)
}

// subtree is the end of r's subtree in the binomial tree of n ranks: it
// holds the ranks [r, subtree(r, n)).
func subtree(r, n int) int {
	if r == 0 {
		return n
	}
	return min(r+(r&-r), n)
}

func (g *gather) run(ctx context.Context) error {
	err := g.steps(ctx)
	if err != nil {
		g.abandon(err)
	}
	return err
}

func (g *gather) steps(ctx context.Context) error {
	me, size := g.n.rank, g.n.nranks
	end := subtree(me, size)
	var children []int // nearest first
	for k := 1; me+k < end; k <<= 1 {
		children = append(children, me+k)
	}
	for _, c := range children {
		if err := g.recv(ctx, c, subtree(c, size)-c, "its subtree"); err != nil {
			return err
		}
	}
	if me != 0 {
		parent := me & (me - 1)
		if err := g.send(ctx, parent, true, -1, -1); err != nil {
			return err
		}
		g.sentUp = true
		if err := g.recv(ctx, parent, size-(end-me), "the ranks outside its subtree"); err != nil {
			return err
		}
	}
	for i := len(children) - 1; i >= 0; i-- { // largest subtree first
		c := children[i]
		if err := g.send(ctx, c, false, c, subtree(c, size)); err != nil {
			return err
		}
		g.sentDown++
	}
	return nil
}

// abandonTimeout bounds the telling of tree neighbours that this rank's
// part of a collective failed.
const abandonTimeout = 500 * time.Millisecond

// abandon tells the tree neighbours still waiting for this rank's stream
// that it will not come: a stream whose header announces 0 bytes, followed
// by why. A wait ends only when the rank it waits on is gone, so without
// this a rank whose parent failed on a lost rank elsewhere would wait for
// the deadline. A timeout is not passed on: the neighbours' own deadlines
// end their waits, naming the ranks they lack.
func (g *gather) abandon(cause error) {
	if gccl.Code(cause) == gccl.TimeoutError || g.n.usable() != nil {
		return
	}
	me, size := g.n.rank, g.n.nranks
	var to []int
	if me != 0 && !g.sentUp {
		to = append(to, me&(me-1))
	}
	var children []int
	for k := 1; me+k < subtree(me, size); k <<= 1 {
		children = append(children, me+k)
	}
	for i := len(children) - 1 - g.sentDown; i >= 0; i-- {
		to = append(to, children[i])
	}
	msg := binary.LittleEndian.AppendUint64(nil, 0)
	msg = append(msg, cause.Error()...)
	ctx, cancel := context.WithTimeout(g.n.stop, abandonTimeout)
	defer cancel()
	for _, p := range to {
		_ = g.n.send(ctx, p, true, wire.Data{Internal: true, Tag: g.tag, Payload: msg[:min(len(msg), MaxMessage)]})
	}
}

// send streams every contribution held, but those of ranks [lo, hi), to
// peer: an 8-byte length, then per contribution its rank, length and bytes,
// cut into messages of at most MaxMessage bytes.
func (g *gather) send(ctx context.Context, peer int, dial bool, lo, hi int) error {
	size := 8
	for _, r := range g.held {
		if r < lo || r >= hi {
			size += 8 + len(g.all[r])
		}
	}
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, size), uint64(size))
	for _, r := range g.held {
		if r >= lo && r < hi {
			continue
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(r))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(g.all[r])))
		b = append(b, g.all[r]...)
	}
	for len(b) > 0 {
		c := b[:min(len(b), MaxMessage)]
		b = b[len(c):]
		if err := g.n.send(ctx, peer, dial, wire.Data{Internal: true, Tag: g.tag, Payload: c}); err != nil {
			return err
		}
	}
	return nil
}

// recv reads peer's stream and adds the want contributions it carries.
func (g *gather) recv(ctx context.Context, peer, want int, step string) error {
	k := boxKey{peer: peer, internal: true, tag: g.tag}
	b, err := g.n.recv(ctx, k, false)
	if err != nil {
		return g.explain(err, peer, step)
	}
	if len(b) < 8 {
		return g.corrupt(peer, "a %d-byte stream header", len(b))
	}
	size := binary.LittleEndian.Uint64(b)
	if size == 0 { // see abandon
		return gccl.Errorf(gccl.RemoteError, peerArg(peer), "rank %d: bootstrap collective #%d: rank %d failed its part: %s",
			g.n.rank, g.tag, peer, b[8:])
	}
	if size < 8 || size > uint64(want)*(8+MaxMessage)+8 {
		return g.corrupt(peer, "a stream of %d bytes for %d contributions", size, want)
	}
	if uint64(len(b)) < size {
		b = append(make([]byte, 0, size), b...)
	}
	for uint64(len(b)) < size {
		c, err := g.n.recv(ctx, k, false)
		if err != nil {
			return g.explain(err, peer, step)
		}
		b = append(b, c...)
	}
	if uint64(len(b)) != size {
		return g.corrupt(peer, "%d bytes where its stream announced %d", len(b), size)
	}
	return g.decode(peer, b[8:], want)
}

func (g *gather) decode(peer int, b []byte, want int) error {
	for got := 0; got < want; got++ {
		if len(b) < 8 {
			return g.corrupt(peer, "%d contributions, want %d", got, want)
		}
		r, l := binary.LittleEndian.Uint32(b), uint64(binary.LittleEndian.Uint32(b[4:]))
		b = b[8:]
		if uint64(r) >= uint64(g.n.nranks) || g.have[r] || l > uint64(len(b)) {
			return g.corrupt(peer, "contribution of rank %d (%d bytes) out of place", r, l)
		}
		g.add(int(r), b[:l:l])
		b = b[l:]
	}
	if len(b) != 0 {
		return g.corrupt(peer, "%d bytes after the contributions", len(b))
	}
	return nil
}

func (g *gather) corrupt(peer int, format string, a ...any) error {
	return gccl.Errorf(gccl.RemoteError, peerArg(peer), "rank %d: bootstrap collective #%d: rank %d sent "+format+" (mixed gccl versions, or collectives called in another order?)",
		append([]any{g.n.rank, g.tag, peer}, a...)...)
}

// explain rewrites a timeout to name the ranks not yet heard from, directly
// or through others.
func (g *gather) explain(err error, peer int, step string) error {
	if gccl.Code(err) != gccl.TimeoutError {
		return err
	}
	var missing []int
	for r, ok := range g.have {
		if !ok {
			missing = append(missing, r)
		}
	}
	return gccl.Errorf(gccl.TimeoutError, "ranks",
		"rank %d: bootstrap collective #%d got nothing from rank %d (%s) before the deadline; not yet heard from ranks %s (are they stuck, or calling collectives in another order?)",
		g.n.rank, g.tag, peer, step, rankList(missing))
}

// rankList formats ranks (ascending) with runs as ranges: [1 3-7 9].
func rankList(ranks []int) string {
	var s strings.Builder
	s.WriteByte('[')
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if i > 0 {
			s.WriteByte(' ')
		}
		s.WriteString(itoa(ranks[i]))
		if j > i {
			s.WriteString("-" + itoa(ranks[j]))
		}
		i = j + 1
	}
	s.WriteByte(']')
	return s.String()
}
