package cudafake

import (
	"sync"
	"time"

	"github.com/gccl/gccl/internal/cuda"
)

type event struct {
	mu       sync.Mutex
	recorded uint64 // eager records enqueued
	done     uint64 // eager records executed
	at       time.Time
	timing   bool
	captured *capturedRecord // the latest record, when it was made in a capture
}

// capturedRecord is an event recorded on a capturing stream: the capture
// and the tasks of each stream a waiter then depends on.
type capturedRecord struct {
	g    *graph
	seen map[*stream]uint64
}

func (f *Fake) event(fn string, h cuda.Event) (*event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.events[h]; ok {
		return e, nil
	}
	return nil, fail(fn, cuda.ErrorInvalidHandle)
}

func (f *Fake) EventCreate(flags uint32) (cuda.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := cuda.Event(f.handle())
	f.events[h] = &event{timing: flags&cuda.EventDisableTiming == 0}
	return h, nil
}

func (f *Fake) EventDestroy(h cuda.Event) error {
	if _, err := f.event("cuEventDestroy", h); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.events, h)
	return nil
}

func (f *Fake) EventRecord(h cuda.Event, sh cuda.Stream) error {
	e, err := f.event("cuEventRecord", h)
	if err != nil {
		return err
	}
	s, err := f.stream("cuEventRecord", sh)
	if err != nil {
		return err
	}
	s.mu.Lock()
	g := s.capture
	s.mu.Unlock()
	if g != nil { // a point of the graph, for waits in the same capture
		rec := &capturedRecord{g: g, seen: g.seq.record(s)}
		e.mu.Lock()
		e.captured = rec
		e.mu.Unlock()
		return nil
	}
	e.mu.Lock()
	e.recorded++
	e.captured = nil
	e.mu.Unlock()
	s.enqueue(func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.done++
		e.at = time.Now()
		return nil
	})
	return nil
}

func (e *event) reached(target uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.done >= target
}

func (f *Fake) EventSynchronize(h cuda.Event) error {
	e, err := f.event("cuEventSynchronize", h)
	if err != nil {
		return err
	}
	e.mu.Lock()
	target := e.recorded
	e.mu.Unlock()
	return f.waitUntil("cuEventSynchronize", func() bool { return e.reached(target) })
}

func (f *Fake) EventQuery(h cuda.Event) (bool, error) {
	e, err := f.event("cuEventQuery", h)
	if err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.done >= e.recorded, nil
}

func (f *Fake) EventElapsedTime(start, end cuda.Event) (float32, error) {
	var at [2]time.Time
	for i, h := range []cuda.Event{start, end} {
		e, err := f.event("cuEventElapsedTime", h)
		if err != nil {
			return 0, err
		}
		e.mu.Lock()
		ok, done, timing := e.recorded > 0, e.done >= e.recorded, e.timing
		at[i] = e.at
		e.mu.Unlock()
		if !timing || !ok {
			return 0, fail("cuEventElapsedTime", cuda.ErrorInvalidHandle)
		}
		if !done {
			return 0, fail("cuEventElapsedTime", cuda.ErrorNotReady)
		}
	}
	return float32(at[1].Sub(at[0]).Seconds() * 1e3), nil
}

func (f *Fake) StreamWaitEvent(sh cuda.Stream, h cuda.Event) error {
	e, err := f.event("cuStreamWaitEvent", h)
	if err != nil {
		return err
	}
	s, err := f.stream("cuStreamWaitEvent", sh)
	if err != nil {
		return err
	}
	e.mu.Lock()
	target, rec := e.recorded, e.captured
	e.mu.Unlock()
	s.mu.Lock()
	g := s.capture
	if rec != nil && g == nil && sh != 0 { // s forks into rec's capture
		s.capture = rec.g
	}
	s.mu.Unlock()
	switch {
	case rec != nil && (g == nil || g == rec.g):
		if sh == 0 {
			return fail("cuStreamWaitEvent", cuda.ErrorStreamCaptureUnsupported) // the legacy stream cannot be captured
		}
		rec.g.seq.follow(s, rec.seen, g == nil)
		return nil
	case rec != nil || g != nil && target > 0: // a dependency across the capture's boundary
		return fail("cuStreamWaitEvent", cuda.ErrorStreamCaptureIsolation)
	case g != nil: // never recorded: nothing to wait for
		return nil
	}
	s.enqueue(func() error {
		return f.waitUntil("cuStreamWaitEvent", func() bool { return e.reached(target) })
	})
	return nil
}

// ---- modules and kernels ----------------------------------------------

func (f *Fake) ModuleLoadData(image []byte) (cuda.Module, error) {
	if len(image) == 0 {
		return 0, fail("cuModuleLoadData", cuda.ErrorInvalidImage)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := cuda.Module(f.handle())
	f.modules[m] = true
	return m, nil
}

func (f *Fake) ModuleUnload(m cuda.Module) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.modules[m] {
		return fail("cuModuleUnload", cuda.ErrorInvalidHandle)
	}
	delete(f.modules, m)
	return nil
}

func (f *Fake) ModuleGetFunction(m cuda.Module, name string) (cuda.Function, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.modules[m] {
		return 0, fail("cuModuleGetFunction", cuda.ErrorInvalidHandle)
	}
	if _, ok := f.kernels[name]; !ok {
		return 0, fail("cuModuleGetFunction", cuda.ErrorNotFound)
	}
	if fn, ok := f.fnByName[name]; ok {
		return fn, nil
	}
	fn := cuda.Function(f.handle())
	f.funcs[fn], f.fnByName[name] = name, fn
	return fn, nil
}

func (f *Fake) LaunchKernel(fn cuda.Function, grid, block cuda.Dim3, sharedMem int, h cuda.Stream, args *cuda.Args) error {
	if args != nil && args.Err() != nil {
		return args.Err()
	}
	for _, v := range []uint32{grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z} {
		if v == 0 || sharedMem < 0 {
			return fail("cuLaunchKernel", cuda.ErrorInvalidValue)
		}
	}
	f.mu.Lock()
	k := f.kernels[f.funcs[fn]]
	f.mu.Unlock()
	if k == nil {
		return fail("cuLaunchKernel", cuda.ErrorInvalidHandle)
	}
	s, err := f.stream("cuLaunchKernel", h)
	if err != nil {
		return err
	}
	a := args.Clone()
	s.enqueue(func() error { return k(f, grid, block, a) })
	return nil
}
