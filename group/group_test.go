package group_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// mixed adds 64 operations to g for rank r of w, mixing collectives and a
// ring of sends and receives, and returns the checks to run after Sync.
// Every rank's group holds the same collectives in the same order.
type mixed struct {
	w      *colltest.World
	rng    *rand.Rand
	checks []func(t *testing.T)
}

// allReduce adds one AllReduce of count float32 to every rank's group.
func (m *mixed) allReduce(t *testing.T, gs []*group.Group, count int) {
	n := m.w.N()
	inputs, outs := make([][]byte, n), make([][]byte, n)
	for r := range n {
		sp, sb := m.w.Alloc(t, r, 4*count, m.rng)
		reduce.Fill(sb, gccl.Float32, m.rng)
		inputs[r] = bytes.Clone(sb)
		rp, rb := m.w.Alloc(t, r, 4*count, m.rng)
		outs[r] = rb
		gs[r].AllReduce(m.w.Comms[r], sp, rp, count, gccl.Float32, gccl.Sum, m.w.Streams[r])
	}
	m.checks = append(m.checks, func(t *testing.T) {
		want := reduce.Reference(inputs, gccl.Float32, gccl.Sum, 0)
		for r := range n {
			require.NoError(t, reduce.Check(outs[r], want, gccl.Float32, n), "allreduce count=%d rank %d", count, r)
		}
	})
}

// broadcast adds one Broadcast of count bytes from root.
func (m *mixed) broadcast(t *testing.T, gs []*group.Group, count, root int) {
	n := m.w.N()
	outs := make([][]byte, n)
	var input []byte
	for r := range n {
		sp, sb := m.w.Alloc(t, r, count, m.rng)
		if r == root {
			input = bytes.Clone(sb)
		}
		rp, rb := m.w.Alloc(t, r, count, m.rng)
		outs[r] = rb
		gs[r].Broadcast(m.w.Comms[r], sp, rp, count, gccl.Uint8, root, m.w.Streams[r])
	}
	m.checks = append(m.checks, func(t *testing.T) {
		for r := range n {
			require.True(t, bytes.Equal(outs[r], input), "broadcast count=%d root=%d rank %d", count, root, r)
		}
	})
}

// ring adds a send to r+1 and a receive from r-1 of count bytes on every rank.
func (m *mixed) ring(t *testing.T, gs []*group.Group, count int) {
	n := m.w.N()
	ins, outs := make([][]byte, n), make([][]byte, n)
	for r := range n {
		sp, sb := m.w.Alloc(t, r, count, m.rng)
		rp, rb := m.w.Alloc(t, r, count, m.rng)
		ins[r], outs[r] = sb, rb
		gs[r].Send(m.w.Comms[r], sp, count, gccl.Uint8, (r+1)%n, m.w.Streams[r])
		gs[r].Recv(m.w.Comms[r], rp, count, gccl.Uint8, (r+n-1)%n, m.w.Streams[r])
	}
	m.checks = append(m.checks, func(t *testing.T) {
		for r := range n {
			require.True(t, bytes.Equal(outs[r], ins[(r+n-1)%n]), "ring count=%d rank %d", count, r)
		}
	})
}

// fill adds 64 operations per rank: 16 rounds of AllReduce, Broadcast and
// a send/receive pair.
func (m *mixed) fill(t *testing.T, gs []*group.Group) {
	for i := range 16 {
		m.allReduce(t, gs, 1+m.rng.IntN(5000))
		m.broadcast(t, gs, m.rng.IntN(20000), i%m.w.N())
		m.ring(t, gs, 1+m.rng.IntN(200_000))
	}
}

func (m *mixed) check(t *testing.T) {
	for _, c := range m.checks {
		c(t)
	}
}

func newGroups(n int) []*group.Group {
	gs := make([]*group.Group, n)
	for r := range gs {
		gs[r] = group.New()
	}
	return gs
}

// TestMixedGroup: a group of 64 operations per rank (collectives and
// send/receive), one group per rank.
func TestMixedGroup(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		w := colltest.New(t, n, nil)
		m := &mixed{w: w, rng: rand.New(rand.NewPCG(uint64(n), 20))}
		gs := newGroups(n)
		m.fill(t, gs)
		for _, g := range gs {
			require.NoError(t, g.End())
		}
		w.Sync(t)
		m.check(t)
	}
}

// TestOneGoroutineTwoComms: one goroutine drives every rank of two
// communicators with one group (as a process driving several devices):
// End launches every communicator's share without waiting for any.
func TestOneGoroutineTwoComms(t *testing.T) {
	const n = 3
	a, b := colltest.New(t, n, nil), colltest.New(t, n, nil)
	ma := &mixed{w: a, rng: rand.New(rand.NewPCG(1, 21))}
	mb := &mixed{w: b, rng: rand.New(rand.NewPCG(2, 21))}
	g := group.New()
	gs := []*group.Group{g, g, g}
	ma.fill(t, gs)
	mb.fill(t, gs)
	require.NoError(t, g.End())
	a.Sync(t)
	b.Sync(t)
	ma.check(t)
	mb.check(t)
}

// TestNonblocking: End on a nonblocking communicator returns
// gccl.ErrInProgress; the operations complete and AsyncError is nil.
func TestNonblocking(t *testing.T) {
	blocking := false
	w := colltest.New(t, 2, &comm.Config{Blocking: &blocking, Timeout: colltest.DefaultTimeout})
	m := &mixed{w: w, rng: rand.New(rand.NewPCG(3, 22))}
	gs := newGroups(2)
	m.fill(t, gs)
	for _, g := range gs {
		require.ErrorIs(t, g.End(), gccl.ErrInProgress)
	}
	for _, c := range w.Comms {
		require.NoError(t, c.AsyncError())
	}
	w.Sync(t)
	m.check(t)
}

// TestClosedCommInGroup: a group holding an operation on a closed
// communicator fails with a typed error and launches nothing.
func TestClosedCommInGroup(t *testing.T) {
	a, b := colltest.New(t, 2, nil), colltest.New(t, 2, nil)
	rng := rand.New(rand.NewPCG(4, 23))
	p, buf := a.Alloc(t, 0, 64, rng)
	before := bytes.Clone(buf)
	q, _ := b.Alloc(t, 0, 64, rng)
	require.NoError(t, b.Comms[0].Close())
	g := group.New()
	g.AllReduce(a.Comms[0], p, p, 16, gccl.Int32, gccl.Sum, a.Streams[0])
	g.AllReduce(b.Comms[0], q, q, 16, gccl.Int32, gccl.Sum, b.Streams[0])
	err := g.End()
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.NoError(t, a.Devs[0].Synchronize(a.Streams[0]))
	require.Equal(t, before, buf, "nothing may run when End fails")
	require.ErrorIs(t, g.End(), gccl.ErrInvalidUsage, "End twice")
}

// TestGroupBadInput: the first invalid operation fails End with an error
// naming the argument, and nothing is launched.
func TestGroupBadInput(t *testing.T) {
	w := colltest.New(t, 2, nil)
	rng := rand.New(rand.NewPCG(5, 24))
	p, buf := w.Alloc(t, 0, 64, rng)
	before := bytes.Clone(buf)
	for arg, add := range map[string]func(g *group.Group){
		"peer":   func(g *group.Group) { g.Send(w.Comms[0], p, 4, gccl.Int32, 2, w.Streams[0]) },
		"root":   func(g *group.Group) { g.Reduce(w.Comms[0], p, p, 4, gccl.Int32, gccl.Sum, -1, w.Streams[0]) },
		"stream": func(g *group.Group) { g.Recv(w.Comms[0], p, 4, gccl.Int32, 1, 0x1234) },
		"comm":   func(g *group.Group) { g.AllGather(nil, p, p, 4, gccl.Int32, w.Streams[0]) },
	} {
		g := group.New()
		g.AllReduce(w.Comms[0], p, p, 16, gccl.Int32, gccl.Sum, w.Streams[0])
		add(g)
		err := g.End()
		var ge *gccl.Error
		require.ErrorAs(t, err, &ge, arg)
		require.Equal(t, arg, ge.Arg, "%v", err)
	}
	require.NoError(t, w.Devs[0].Synchronize(w.Streams[0]))
	require.Equal(t, before, buf, "nothing may run when End fails")
}

// TestMixedBlocking: a group over a blocking and a nonblocking communicator
// fails with gccl.ErrInvalidArgument naming "comm", as NCCL rejects it,
// and launches nothing.
func TestMixedBlocking(t *testing.T) {
	nonblocking := false
	a := colltest.New(t, 2, nil)
	b := colltest.New(t, 2, &comm.Config{Blocking: &nonblocking, Timeout: colltest.DefaultTimeout})
	rng := rand.New(rand.NewPCG(6, 25))
	p, buf := a.Alloc(t, 0, 64, rng)
	before := bytes.Clone(buf)
	q, _ := b.Alloc(t, 0, 64, rng)
	for _, order := range [][2]*colltest.World{{a, b}, {b, a}} {
		g := group.New()
		for _, w := range order {
			x := p
			if w == b {
				x = q
			}
			g.AllReduce(w.Comms[0], x, x, 16, gccl.Int32, gccl.Sum, w.Streams[0])
		}
		err := g.End()
		var ge *gccl.Error
		require.ErrorAs(t, err, &ge)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
		require.Equal(t, "comm", ge.Arg, "%v", err)
	}
	require.NoError(t, a.Devs[0].Synchronize(a.Streams[0]))
	require.Equal(t, before, buf, "nothing may run when End fails")
}
