package cudafake

import (
	"maps"
	"sync"

	"github.com/gccl/gccl/internal/cuda"
)

// graph is a captured task list, or an instantiated copy of one.
type graph struct {
	id    uint64
	tasks []task
	objs  map[cuda.UserObject]int // references this graph holds
	seq   *sequence               // the capture that builds it; nil for executables
}

// sequence is a capture in progress over one or more streams: the origin,
// where it began and must end, and the streams forked into it by waiting
// on an event recorded in it. The tasks of all of them go to one list in
// the order they were enqueued (a topological order of the real graph's
// nodes, which a replay runs one after the other). Each stream's clock
// counts the tasks of every stream it depends on, so that the end of the
// capture can tell whether every forked stream was joined back.
type sequence struct {
	mu     sync.Mutex
	origin *stream
	forked []*stream
	count  map[*stream]uint64             // tasks captured per stream
	clock  map[*stream]map[*stream]uint64 // per stream: how many tasks of each it follows
}

func newSequence(origin *stream) *sequence {
	return &sequence{origin: origin, count: map[*stream]uint64{}, clock: map[*stream]map[*stream]uint64{}}
}

// add captures t, enqueued on s.
func (g *graph) add(s *stream, t task) {
	q := g.seq
	q.mu.Lock()
	defer q.mu.Unlock()
	g.tasks = append(g.tasks, t)
	q.count[s]++
}

// record is what an event recorded on s now makes a waiter depend on.
func (q *sequence) record(s *stream) map[*stream]uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	seen := maps.Clone(q.clock[s])
	if seen == nil {
		seen = map[*stream]uint64{}
	}
	seen[s] = q.count[s]
	return seen
}

// follow makes s depend on what seen covers; a stream not yet in the
// capture is forked into it.
func (q *sequence) follow(s *stream, seen map[*stream]uint64, fork bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if fork {
		q.forked = append(q.forked, s)
	}
	c := q.clock[s]
	if c == nil {
		c = map[*stream]uint64{}
		q.clock[s] = c
	}
	for x, n := range seen {
		c[x] = max(c[x], n)
	}
}

// unjoined reports whether a forked stream has tasks the origin does not
// depend on.
func (q *sequence) unjoined() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, x := range q.forked {
		if q.clock[q.origin][x] < q.count[x] {
			return true
		}
	}
	return false
}

type userObject struct {
	refs int
	fn   func()
}

func (f *Fake) StreamBeginCapture(h cuda.Stream, mode cuda.CaptureMode) error {
	s, err := f.stream("cuStreamBeginCapture", h)
	if err != nil {
		return err
	}
	if h == 0 {
		return fail("cuStreamBeginCapture", cuda.ErrorStreamCaptureUnsupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capture != nil {
		return fail("cuStreamBeginCapture", cuda.ErrorInvalidValue)
	}
	f.mu.Lock()
	f.captureID++
	g := &graph{id: f.captureID, objs: map[cuda.UserObject]int{}, seq: newSequence(s)}
	f.graphs[cuda.Graph(f.handle())] = g
	f.mu.Unlock()
	s.capture = g
	return nil
}

// ThreadExchangeStreamCaptureMode keeps one mode for the whole fake (its
// captures do not police unsafe calls) and counts the calls.
func (f *Fake) ThreadExchangeStreamCaptureMode(mode cuda.CaptureMode) (cuda.CaptureMode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.captureMode
	f.captureMode = mode
	f.modeExchanges++
	return prev, nil
}

// CaptureModeExchanges reports how many times the mode was exchanged.
func (f *Fake) CaptureModeExchanges() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.modeExchanges
}

func (f *Fake) graphHandle(g *graph) cuda.Graph {
	f.mu.Lock()
	defer f.mu.Unlock()
	for h, x := range f.graphs {
		if x == g {
			return h
		}
	}
	return 0
}

// StreamEndCapture ends the capture on its origin stream, and on every
// stream forked into it; a forked stream whose work was not joined back
// into the origin fails it (the graph is dropped), as the driver does.
func (f *Fake) StreamEndCapture(h cuda.Stream) (cuda.Graph, error) {
	s, err := f.stream("cuStreamEndCapture", h)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	g := s.capture
	s.mu.Unlock()
	if g == nil {
		return 0, fail("cuStreamEndCapture", cuda.ErrorInvalidValue)
	}
	if g.seq.origin != s {
		return 0, fail("cuStreamEndCapture", cuda.ErrorStreamCaptureUnmatched)
	}
	unjoined := g.seq.unjoined()
	for _, x := range append(g.seq.forked, s) {
		x.mu.Lock()
		x.capture = nil
		x.mu.Unlock()
	}
	gh := f.graphHandle(g)
	if unjoined {
		f.mu.Lock()
		delete(f.graphs, gh)
		f.mu.Unlock()
		return 0, fail("cuStreamEndCapture", cuda.ErrorStreamCaptureUnjoined)
	}
	return gh, nil
}

func (f *Fake) StreamIsCapturing(h cuda.Stream) (cuda.CaptureStatus, error) {
	info, err := f.StreamGetCaptureInfo(h)
	return info.Status, err
}

func (f *Fake) StreamGetCaptureInfo(h cuda.Stream) (cuda.CaptureInfo, error) {
	s, err := f.stream("cuStreamGetCaptureInfo", h)
	if err != nil {
		return cuda.CaptureInfo{}, err
	}
	s.mu.Lock()
	g := s.capture
	s.mu.Unlock()
	if g == nil {
		return cuda.CaptureInfo{Status: cuda.CaptureNone}, nil
	}
	return cuda.CaptureInfo{Status: cuda.CaptureActive, ID: g.id, Graph: f.graphHandle(g)}, nil
}

func (f *Fake) GraphInstantiate(gh cuda.Graph) (cuda.GraphExec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.graphs[gh]
	if !ok {
		return 0, fail("cuGraphInstantiate", cuda.ErrorInvalidHandle)
	}
	e := &graph{id: g.id, tasks: append([]task(nil), g.tasks...), objs: map[cuda.UserObject]int{}}
	for o, n := range g.objs {
		e.objs[o] = n
		f.objects[o].refs += n
	}
	eh := cuda.GraphExec(f.handle())
	f.execs[eh] = e
	return eh, nil
}

func (f *Fake) GraphLaunch(eh cuda.GraphExec, h cuda.Stream) error {
	f.mu.Lock()
	e, ok := f.execs[eh]
	f.mu.Unlock()
	if !ok {
		return fail("cuGraphLaunch", cuda.ErrorInvalidHandle)
	}
	s, err := f.stream("cuGraphLaunch", h)
	if err != nil {
		return err
	}
	s.enqueue(func() error {
		for _, t := range e.tasks {
			if err := t(); err != nil {
				return err
			}
		}
		return nil
	})
	return nil
}

// dropObjects releases the user-object references g holds. Callers hold f.mu.
func (f *Fake) dropObjects(g *graph) {
	for o, n := range g.objs {
		f.releaseLocked(o, n)
	}
}

func (f *Fake) GraphDestroy(gh cuda.Graph) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.graphs[gh]
	if !ok {
		return fail("cuGraphDestroy", cuda.ErrorInvalidHandle)
	}
	delete(f.graphs, gh)
	f.dropObjects(g)
	return nil
}

func (f *Fake) GraphExecDestroy(eh cuda.GraphExec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.execs[eh]
	if !ok {
		return fail("cuGraphExecDestroy", cuda.ErrorInvalidHandle)
	}
	delete(f.execs, eh)
	f.dropObjects(e)
	return nil
}

func (f *Fake) UserObjectCreate(fn func()) (cuda.UserObject, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := cuda.UserObject(f.handle())
	f.objects[o] = &userObject{refs: 1, fn: fn}
	return o, nil
}

// releaseLocked drops n references; the last runs the destructor
// asynchronously, as the driver does. Callers hold f.mu.
func (f *Fake) releaseLocked(o cuda.UserObject, n int) error {
	u, ok := f.objects[o]
	if !ok || n <= 0 || n > u.refs {
		return fail("cuUserObjectRelease", cuda.ErrorInvalidValue)
	}
	u.refs -= n
	if u.refs == 0 {
		delete(f.objects, o)
		go u.fn()
	}
	return nil
}

func (f *Fake) UserObjectRelease(o cuda.UserObject, count int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.releaseLocked(o, count)
}

func (f *Fake) GraphRetainUserObject(gh cuda.Graph, o cuda.UserObject, count int, move bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.graphs[gh]
	u, uok := f.objects[o]
	if !ok || !uok || count <= 0 || (move && count > u.refs) {
		return fail("cuGraphRetainUserObject", cuda.ErrorInvalidValue)
	}
	g.objs[o] += count
	if !move {
		u.refs += count
	}
	return nil
}
