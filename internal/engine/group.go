package engine

import (
	"cmp"
	"errors"
	"slices"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
)

// Work is one engine's ops in a group launch.
type Work struct {
	Engine *Engine
	Ops    []Op
}

// Launch validates ops and submits them as one launch: collectives run in
// issue order, then the point-to-point ops progress concurrently. Nothing is
// submitted if any op is invalid.
func (e *Engine) Launch(ops []Op) error {
	if e == nil {
		return gccl.Errorf(gccl.InvalidArgument, "comm", "group member 0 has a nil communicator")
	}
	l, err := e.prepare(ops)
	if err != nil || l == nil {
		return err
	}
	return e.submit(l)
}

// LaunchGroup submits a group: one launch per engine (per device). Every op
// of every engine is validated before anything is submitted. The launches
// of Joiner backends are submitted together (submitJoined); the others in
// the engines' ID order (Config.ID), which every rank of a communicator
// shares, whatever order the group added them in (ordered).
func LaunchGroup(works []Work) error {
	if len(works) == 1 { // one engine: nothing to join or order
		return works[0].Engine.Launch(works[0].Ops)
	}
	ls, err := prepareAll(works)
	if err != nil {
		return err
	}
	var joined, own []*Launch
	for _, l := range ls {
		if l == nil {
			continue
		}
		if _, joins := l.Backend().(Joiner); joins {
			joined = append(joined, l)
		} else {
			own = append(own, l)
		}
	}
	own = ordered(own)
	if len(own) > 1 && meets(own) {
		return submitConcurrently(own, joined)
	}
	for i, l := range own {
		if err := l.e.submit(l); err != nil {
			recycleAll(own[i+1:])
			recycleAll(joined)
			return err
		}
	}
	return submitJoined(joined)
}

// ordered sorts launches by their engines' IDs, keeping the group's order
// between equal IDs (0, or ranks of one communicator driven together).
//
// A backend that is not a Joiner enqueues each launch on its stream as its
// own work (the GPU backend: kernels), so two communicators that share a
// stream run one after the other in submission order. Were that the order
// in which this rank added them to the group, a rank adding A then B and a
// peer adding B then A would each wait in A's (B's) kernel for the other's,
// queued behind B's (A's): a deadlock. Every rank submitting in ID order
// orders every shared stream the same way, so no such cycle forms, and no
// more of a rank's kernels need to run at once than before.
func ordered(ls []*Launch) []*Launch {
	slices.SortStableFunc(ls, func(a, b *Launch) int { return cmp.Compare(a.e.id, b.e.id) })
	return ls
}

// prepareAll validates every work's ops: one launch per work (nil for no ops).
func prepareAll(works []Work) ([]*Launch, error) {
	ls := make([]*Launch, 0, len(works))
	for i, w := range works {
		var err error
		var l *Launch
		switch {
		case w.Engine == nil:
			err = gccl.Errorf(gccl.InvalidArgument, "comm", "group member %d has a nil communicator", i)
		case appearsBefore(works, i):
			err = gccl.Errorf(gccl.InvalidUsage, "comm", "communicator appears twice in one group launch; merge its ops")
		default:
			l, err = w.Engine.prepare(w.Ops)
		}
		if err != nil {
			recycleAll(ls)
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// recycleAll recycles launches that were never submitted (nil ones skipped).
func recycleAll(ls []*Launch) {
	for _, l := range ls {
		if l != nil {
			l.e.recycle(l)
		}
	}
}

// meets reports whether a backend of the group would wait in Submit for
// its peers (Meeter), which may be engines of this same group.
func meets(ls []*Launch) bool {
	for _, l := range ls {
		if m, ok := l.Backend().(Meeter); ok && m.Meets(l) {
			return true
		}
	}
	return false
}

// submitConcurrently submits launches whose Submit may wait for each
// other: every set of launches that share a stream (directly or through
// other launches) on its own goroutine, in the order given (ordered), so
// each stream still gets the group's work in ID order; the Joiners'
// batches on one more. It returns every error.
func submitConcurrently(own, joined []*Launch) error {
	sets := shareStreams(own)
	errs := make([]error, len(sets)+1)
	var wg sync.WaitGroup
	for i, set := range sets {
		wg.Go(func() {
			for k, l := range set {
				if errs[i] = l.e.submit(l); errs[i] != nil {
					recycleAll(set[k+1:])
					return
				}
			}
		})
	}
	wg.Go(func() { errs[len(sets)] = submitJoined(joined) })
	wg.Wait()
	return errors.Join(errs...)
}

// streamKey names a stream: a handle of one device.
type streamKey struct {
	kind    device.Kind
	ordinal int
	s       gccl.Stream
}

// shareStreams splits ls into sets of launches that share a stream,
// directly or through other launches, each in ls's order.
func shareStreams(ls []*Launch) [][]*Launch {
	label := make([]int, len(ls)) // a set's label: the index of its first launch
	first := map[streamKey]int{}  // the first launch on each stream
	for i, l := range ls {
		label[i] = i
		for _, k := range l.streamKeys() {
			j, seen := first[k]
			if !seen {
				first[k] = i
				continue
			}
			from, to := max(label[i], label[j]), min(label[i], label[j])
			for x := range i + 1 {
				if label[x] == from {
					label[x] = to
				}
			}
		}
	}
	var sets [][]*Launch
	at := map[int]int{} // label → index in sets
	for i, l := range ls {
		k, ok := at[label[i]]
		if !ok {
			k = len(sets)
			at[label[i]] = k
			sets = append(sets, nil)
		}
		sets[k] = append(sets[k], l)
	}
	return sets
}

// streamKeys are the launch's streams.
func (l *Launch) streamKeys() []streamKey {
	d := l.e.dev
	keys := []streamKey{{d.Kind(), d.Ordinal(), l.Stream}}
	for _, s := range l.More {
		keys = append(keys, streamKey{d.Kind(), d.Ordinal(), s})
	}
	return keys
}

// submitJoined hands the launches of Joiner backends to their Joiner, one
// call per set of backends that join, and submits the batches it makes:
// each batch's launches get their engines' next turns, then the batch is
// submitted; a batch that fails gives its turns back, and later launches
// are not submitted.
func submitJoined(ls []*Launch) error {
	for len(ls) > 0 {
		j := ls[0].e.backend.(Joiner)
		var mine, rest []*Launch
		for _, l := range ls {
			if j.Joins(l.e.backend) {
				mine = append(mine, l)
			} else {
				rest = append(rest, l)
			}
		}
		batches, err := j.Join(mine)
		if err != nil {
			recycleAll(ls)
			return err
		}
		for i, b := range batches {
			for _, l := range b.Launches {
				l.ticket = l.e.order.take()
			}
			if err := b.Submit(); err != nil {
				for _, l := range b.Launches {
					l.e.order.release() // keep later tickets moving
					l.e.recycle(l)
				}
				for _, later := range batches[i+1:] {
					recycleAll(later.Launches)
				}
				recycleAll(rest)
				return err
			}
		}
		ls = rest
	}
	return nil
}

// appearsBefore reports whether works[i]'s engine is also one of works[:i]'s.
// Groups span a handful of devices, so a scan beats building a set.
func appearsBefore(works []Work, i int) bool {
	for j := range i {
		if works[j].Engine == works[i].Engine {
			return true
		}
	}
	return false
}

// submit gives l the engine's next ticket and hands it to the backend.
func (e *Engine) submit(l *Launch) error {
	l.ticket = e.order.take()
	if err := e.backend.Submit(l); err != nil {
		e.order.release() // keep later tickets moving
		e.recycle(l)
		return err
	}
	return nil
}

// prepare validates ops for this engine; nil launch for no ops.
func (e *Engine) prepare(ops []Op) (*Launch, error) {
	if e.Closed() {
		return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is closed or aborted; create a new one")
	}
	if err := e.AsyncError(); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	l := e.newLaunch(ops[0].Stream, len(ops))
	for i := range ops {
		o := ops[i]
		if err := o.Validate(e.rank, e.nranks, e.validOp, e.checkPtr); err != nil {
			e.recycle(l)
			return nil, err
		}
		e.addStream(l, o.Stream)
		if o.Kind.IsP2P() {
			continue // after the collectives, below
		}
		if !o.Kind.Reduces() {
			o.Op = gccl.Sum // unused by this kind
		} else if o.Op < 0 || o.Op >= gccl.NumBuiltinOps {
			var err error
			if o.scalar, err = e.userOp(o.Op, o.Type); err != nil {
				e.recycle(l)
				return nil, err
			}
		}
		l.Ops = append(l.Ops, o)
	}
	for i := range ops {
		if ops[i].Kind.IsP2P() {
			l.Ops = append(l.Ops, ops[i])
		}
	}
	return l, nil
}

// addStream notes that an op of l runs on s. A launch on several streams
// joins them (NCCL >= 2.20), on every backend: it starts once every stream
// has reached it and later work on any of them waits for it.
func (e *Engine) addStream(l *Launch, s gccl.Stream) {
	if s != l.Stream && !slices.Contains(l.More, s) {
		l.More = append(l.More, s)
	}
}
