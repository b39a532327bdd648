package cudafake

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/wait"
)

type task func() error

// stream is an ordered queue run by one goroutine at a time, started when
// work is queued on an idle stream and gone when the queue is empty, so an
// idle stream (the legacy stream of every Fake, a stream a test never
// destroyed) holds no goroutine. The first failing task makes the stream's
// error sticky, as a CUDA error poisons a context.
type stream struct {
	f       *Fake
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []task
	pending int
	err     error
	running bool   // a worker goroutine is draining the queue
	capture *graph // non-nil while capturing
}

func newStream(f *Fake, id cuda.Stream) *stream {
	s := &stream{f: f}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// run drains the queue in order, then ends.
func (s *stream) run() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		t := s.queue[0]
		s.queue = s.queue[1:]
		failed := s.err != nil
		s.mu.Unlock()
		var err error
		if !failed {
			err = t()
		}
		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
		s.pending--
		s.cond.Broadcast()
	}
	s.running = false
}

func (s *stream) enqueue(t task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capture != nil {
		s.capture.add(s, t)
		return
	}
	s.queue = append(s.queue, t)
	s.pending++
	if !s.running {
		s.running = true
		go s.run()
	}
}

func (s *stream) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capture != nil {
		return fail("cuStreamSynchronize", cuda.ErrorStreamCaptureUnsupported)
	}
	for s.pending > 0 {
		s.cond.Wait()
	}
	return s.err
}

func (f *Fake) stream(fn string, h cuda.Stream) (*stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.streams[h]; ok {
		return s, nil
	}
	return nil, fail(fn, cuda.ErrorInvalidHandle)
}

func (f *Fake) StreamCreate(flags uint32) (cuda.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := cuda.Stream(f.handle())
	f.streams[h] = newStream(f, h)
	return h, nil
}

func (f *Fake) StreamDestroy(h cuda.Stream) error {
	_, err := f.stream("cuStreamDestroy", h)
	if err != nil || h == 0 {
		return fail("cuStreamDestroy", cuda.ErrorInvalidHandle)
	}
	f.mu.Lock()
	delete(f.streams, h)
	f.mu.Unlock()
	return nil // a worker still draining the queue ends when it is empty
}

func (f *Fake) StreamSynchronize(h cuda.Stream) error {
	s, err := f.stream("cuStreamSynchronize", h)
	if err != nil {
		return err
	}
	return s.sync()
}

func (f *Fake) StreamQuery(h cuda.Stream) (bool, error) {
	s, err := f.stream("cuStreamQuery", h)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capture != nil {
		return false, fail("cuStreamQuery", cuda.ErrorStreamCaptureUnsupported)
	}
	return s.pending == 0, s.err
}

// waitUntil polls cond until it holds or the fake's wait timeout passes.
func (f *Fake) waitUntil(fn string, cond func() bool) error {
	p := wait.Poller{Deadline: time.Now().Add(f.cfg.WaitTimeout), What: fn, MaxSleep: time.Millisecond}
	for !cond() {
		if p.Pause() != nil {
			return fail(fn, cuda.ErrorLaunchTimeout)
		}
	}
	return nil
}

func (f *Fake) MemsetD8Async(p uintptr, v uint8, n int, h cuda.Stream) error {
	return f.memset("cuMemsetD8Async", p, n, 1, uint32(v), h)
}

func (f *Fake) MemsetD32Async(p uintptr, v uint32, n int, h cuda.Stream) error {
	return f.memset("cuMemsetD32Async", p, n, 4, v, h)
}

func (f *Fake) memset(fn string, p uintptr, n, width int, v uint32, h cuda.Stream) error {
	s, err := f.stream(fn, h)
	if err != nil {
		return err
	}
	if width == 4 && p%4 != 0 {
		return fail(fn, cuda.ErrorInvalidValue)
	}
	b, err := f.Bytes(p, n*width)
	if err != nil {
		return err
	}
	s.enqueue(func() error {
		for i := 0; i < len(b); i += width {
			for k := 0; k < width; k++ {
				b[i+k] = byte(v >> (8 * k))
			}
		}
		return nil
	})
	return nil
}

// syncCopy orders a synchronous copy after the legacy stream's work.
func (f *Fake) syncCopy(fn string, dst, src []byte) error {
	if err := f.streams[0].sync(); err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

func (f *Fake) MemcpyHtoD(dst uintptr, src []byte) error {
	d, err := f.Bytes(dst, len(src))
	if err != nil {
		return err
	}
	return f.syncCopy("cuMemcpyHtoD", d, src)
}

func (f *Fake) MemcpyDtoH(dst []byte, src uintptr) error {
	s, err := f.Bytes(src, len(dst))
	if err != nil {
		return err
	}
	return f.syncCopy("cuMemcpyDtoH", dst, s)
}

func (f *Fake) MemcpyDtoD(dst, src uintptr, n int) error {
	d, err := f.Bytes(dst, n)
	if err != nil {
		return err
	}
	s, err := f.Bytes(src, n)
	if err != nil {
		return err
	}
	return f.syncCopy("cuMemcpyDtoD", d, s)
}

func (f *Fake) copyAsync(fn string, dst, src uintptr, n int, h cuda.Stream) error {
	s, err := f.stream(fn, h)
	if err != nil {
		return err
	}
	d, err := f.Bytes(dst, n)
	if err != nil {
		return err
	}
	from, err := f.Bytes(src, n)
	if err != nil {
		return err
	}
	s.enqueue(func() error { copy(d, from); return nil })
	return nil
}

func (f *Fake) MemcpyHtoDAsync(dst, src uintptr, n int, s cuda.Stream) error {
	return f.copyAsync("cuMemcpyHtoDAsync", dst, src, n, s)
}

func (f *Fake) MemcpyDtoHAsync(dst, src uintptr, n int, s cuda.Stream) error {
	return f.copyAsync("cuMemcpyDtoHAsync", dst, src, n, s)
}

func (f *Fake) MemcpyDtoDAsync(dst, src uintptr, n int, s cuda.Stream) error {
	return f.copyAsync("cuMemcpyDtoDAsync", dst, src, n, s)
}

func (f *Fake) LaunchHostFunc(h cuda.Stream, fn func()) error {
	s, err := f.stream("cuLaunchHostFunc", h)
	if err != nil {
		return err
	}
	s.enqueue(func() error { fn(); return nil })
	return nil
}

// word returns the aligned 4- or 8-byte word at addr.
func (f *Fake) word(fn string, addr uintptr, size int) (unsafe.Pointer, error) {
	if addr%uintptr(size) != 0 {
		return nil, fail(fn, cuda.ErrorInvalidValue)
	}
	b, err := f.Bytes(addr, size)
	if err != nil {
		return nil, err
	}
	return unsafe.Pointer(&b[0]), nil
}

func (f *Fake) StreamWriteValue32(h cuda.Stream, addr uintptr, v uint32, flags uint32) error {
	return f.memop("cuStreamWriteValue32", h, addr, 4, func(p unsafe.Pointer) error {
		locked(func() bool { atomic.StoreUint32((*uint32)(p), v); return true })
		return nil
	})
}

func (f *Fake) StreamWriteValue64(h cuda.Stream, addr uintptr, v uint64, flags uint32) error {
	return f.memop("cuStreamWriteValue64", h, addr, 8, func(p unsafe.Pointer) error {
		locked(func() bool { atomic.StoreUint64((*uint64)(p), v); return true })
		return nil
	})
}

// waitHolds is the CUstreamWaitValue condition for the current value x.
func waitHolds(x, v uint64, flags uint32, bits uint) bool {
	switch flags &^ cuda.WaitValueFlush {
	case cuda.WaitValueEQ:
		return x == v
	case cuda.WaitValueAnd:
		return x&v != 0
	case cuda.WaitValueNor:
		return ^(x|v)&(1<<bits-1) != 0
	}
	return (x-v)&(1<<(bits-1)) == 0 // GEQ, wrapping: (int)(x - v) >= 0
}

func (f *Fake) StreamWaitValue32(h cuda.Stream, addr uintptr, v uint32, flags uint32) error {
	return f.memop("cuStreamWaitValue32", h, addr, 4, func(p unsafe.Pointer) error {
		return f.waitUntil("cuStreamWaitValue32", func() bool {
			x := locked(func() uint32 { return atomic.LoadUint32((*uint32)(p)) })
			return waitHolds(uint64(x), uint64(v), flags, 32)
		})
	})
}

func (f *Fake) StreamWaitValue64(h cuda.Stream, addr uintptr, v uint64, flags uint32) error {
	return f.memop("cuStreamWaitValue64", h, addr, 8, func(p unsafe.Pointer) error {
		return f.waitUntil("cuStreamWaitValue64", func() bool {
			x := locked(func() uint64 { return atomic.LoadUint64((*uint64)(p)) })
			return waitHolds(x, v, flags, 64)
		})
	})
}

func (f *Fake) memop(fn string, h cuda.Stream, addr uintptr, size int, op func(unsafe.Pointer) error) error {
	s, err := f.stream(fn, h)
	if err != nil {
		return err
	}
	p, err := f.word(fn, addr, size)
	if err != nil {
		return err
	}
	s.enqueue(func() error { return op(p) })
	return nil
}

// memopMu orders stream memory operations for Go's memory model (and the
// race detector, which does not see atomics on mmapped memory): a write
// and the poll that observes it are both made under it.
var memopMu sync.Mutex

func locked[T any](fn func() T) T {
	memopMu.Lock()
	defer memopMu.Unlock()
	return fn()
}
