package engine_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// joinBackend is a fakeBackend that joins: it accepts launches on several
// streams, and Join makes one batch of every launch it is given.
type joinBackend struct {
	fakeBackend
	joins     *[][]*engine.Launch // every Join call's launches
	batchFail error               // the batch's Submit fails with it when set
}

func (j *joinBackend) Joins(b engine.Backend) bool {
	_, ok := b.(*joinBackend)
	return ok
}

func (j *joinBackend) Join(ls []*engine.Launch) ([]engine.Batch, error) {
	*j.joins = append(*j.joins, ls)
	submit := func() error {
		if j.batchFail != nil {
			return j.batchFail
		}
		for _, l := range ls {
			if err := l.Backend().Submit(l); err != nil {
				return err
			}
		}
		return nil
	}
	return []engine.Batch{{Launches: ls, Submit: submit}}, nil
}

// TestSeamJoiner: a group's launches on Joiner backends reach one Join
// call and may use several streams; other backends get a launch's other
// streams too (Launch.More), to join; a batch that fails gives its turns
// back.
func TestSeamJoiner(t *testing.T) {
	var joins [][]*engine.Launch
	js := []*joinBackend{{joins: &joins}, {joins: &joins}}
	var works []engine.Work
	var bufs []uintptr
	for i, j := range js {
		j.rng = rand.New(rand.NewPCG(uint64(i), 9))
		e, buf := seamEngine(t, j, 10*time.Second)
		two := op(buf, 10+i)
		two.Stream = 2
		works = append(works, engine.Work{Engine: e, Ops: []engine.Op{op(buf, i+1), two}})
		bufs = append(bufs, buf)
	}
	require.NoError(t, engine.LaunchGroup(works))
	require.Len(t, joins, 1)
	assert.Len(t, joins[0], 2)
	for i, j := range js {
		require.NoError(t, works[i].Engine.Drain(context.Background()))
		assert.Equal(t, []int{i + 1, 10 + i}, j.log())
	}

	js[0].batchFail = gccl.Errorf(gccl.InvalidUsage, "stream", "closed")
	require.ErrorIs(t, engine.LaunchGroup(works), gccl.ErrInvalidUsage)
	js[0].batchFail = nil
	require.NoError(t, engine.LaunchGroup(works), "the failed batch gave its turns back")
	for _, w := range works {
		require.NoError(t, w.Engine.Drain(context.Background()))
	}

	var more []gccl.Stream
	plain := &fakeBackend{rng: rand.New(rand.NewPCG(1, 1))}
	plain.run = func(_ context.Context, l *engine.Launch) error {
		more = append(more, l.More...)
		return nil
	}
	e, buf := seamEngine(t, plain, 10*time.Second)
	two, three := op(buf, 2), op(buf, 3)
	two.Stream, three.Stream = 2, 3
	require.NoError(t, e.Launch([]engine.Op{op(buf, 1), two, three, op(buf, 4), two}))
	require.NoError(t, e.Drain(context.Background()))
	assert.Equal(t, []gccl.Stream{2, 3}, more, "the first op's stream runs the launch, the others once each")
}

// meetBackend's Submit waits (up to a second) until every backend of its
// meeting has been submitted to, as the GPU backend agreeing on graph
// registrations with peers that are engines of the same group, and logs
// its name.
type meetBackend struct {
	fakeBackend
	name    string
	meeting *sync.WaitGroup
	order   *submitLog
}

// submitLog is the order of Submit calls, by backend name.
type submitLog struct {
	mu    sync.Mutex
	names []string
}

func (s *submitLog) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append(s.names, name)
}

func (m *meetBackend) Meets(*engine.Launch) bool { return true }

func (m *meetBackend) Submit(l *engine.Launch) error {
	m.order.add(m.name)
	m.meeting.Done()
	met := make(chan struct{})
	go func() { m.meeting.Wait(); close(met) }()
	select {
	case <-met:
		return m.fakeBackend.Submit(l)
	case <-time.After(time.Second):
		return gccl.Errorf(gccl.TimeoutError, "test", "the peers never submitted")
	}
}

// TestSeamMeeter: the launches of a group whose backend meets its peers in
// Submit are submitted concurrently, but those that share a stream one
// after the other in ID order. Two communicators A (ID 1) and B (ID 2)
// have two ranks each in this process, rank r of both on stream r+1; each
// rank meets its communicator's other rank. The group adds B first.
func TestSeamMeeter(t *testing.T) {
	meetings := map[string]*sync.WaitGroup{"A": {}, "B": {}}
	var works []engine.Work
	var ms []*meetBackend
	log := &submitLog{}
	for i, name := range []string{"B0", "B1", "A0", "A1"} {
		comm, rank := name[:1], int(name[1]-'0')
		meetings[comm].Add(1)
		m := &meetBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(uint64(i), 3))}, name: name, meeting: meetings[comm], order: log}
		e, buf := seamEngineID(t, m, 10*time.Second, uint64(1+strings.Index("AB", comm)))
		o := op(buf, i+1)
		o.Stream = gccl.Stream(rank + 1)
		works = append(works, engine.Work{Engine: e, Ops: []engine.Op{o}})
		ms = append(ms, m)
	}
	require.NoError(t, engine.LaunchGroup(works))
	for i, m := range ms {
		require.NoError(t, works[i].Engine.Drain(context.Background()))
		assert.Equal(t, []int{i + 1}, m.log())
	}
	for _, rank := range []string{"0", "1"} {
		a, b := slices.Index(log.names, "A"+rank), slices.Index(log.names, "B"+rank)
		assert.Less(t, a, b, "stream %s: A (ID 1) submitted before B (ID 2): %v", rank, log.names)
	}
}

// orderBackend logs the order of Submit calls, by name.
type orderBackend struct {
	fakeBackend
	name  string
	order *submitLog
}

func (o *orderBackend) Submit(l *engine.Launch) error {
	o.order.add(o.name)
	return o.fakeBackend.Submit(l)
}

// TestSeamGroupOrder: a group's launches on backends that are not Joiners
// are submitted in their engines' ID order, whatever order the group added
// them in, so that every rank of a communicator orders a stream it shares
// with other communicators alike; equal IDs keep the group's order.
func TestSeamGroupOrder(t *testing.T) {
	log := &submitLog{}
	var works []engine.Work
	for i, c := range []struct {
		name string
		id   uint64
	}{{"c", 30}, {"a", 10}, {"x", 0}, {"b", 20}, {"y", 0}} {
		f := &orderBackend{fakeBackend: fakeBackend{rng: rand.New(rand.NewPCG(uint64(i), 5))}, name: c.name, order: log}
		e, buf := seamEngineID(t, f, 10*time.Second, c.id)
		works = append(works, engine.Work{Engine: e, Ops: []engine.Op{op(buf, i+1)}})
	}
	require.NoError(t, engine.LaunchGroup(works))
	for _, w := range works {
		require.NoError(t, w.Engine.Drain(context.Background()))
	}
	assert.Equal(t, []string{"x", "y", "a", "b", "c"}, log.names)
}
