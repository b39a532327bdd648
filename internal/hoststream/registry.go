package hoststream

import (
	"sync"

	"github.com/gccl/gccl"
)

// handleBase tags registered handles so that small integers or CUstream
// values passed by mistake are unlikely to name a host stream.
const handleBase = gccl.Stream(0x6cc1) << 32

var registry = struct {
	sync.RWMutex
	streams  map[gccl.Stream]*Stream
	defaults map[int]*Stream // per device ordinal
	next     gccl.Stream
}{streams: map[gccl.Stream]*Stream{}, defaults: map[int]*Stream{}}

// Default returns device ordinal's default stream, which the handle 0
// names on that device (CUDA's legacy default stream is per device too).
// It is made on first use and never closed.
func Default(ordinal int) *Stream {
	registry.RLock()
	s := registry.defaults[ordinal]
	registry.RUnlock()
	if s != nil {
		return s
	}
	registry.Lock()
	defer registry.Unlock()
	if s = registry.defaults[ordinal]; s == nil {
		s = New()
		registry.defaults[ordinal] = s
	}
	return s
}

// Register returns a new handle for s. Handles are never 0 and are not
// reused within a process.
func Register(s *Stream) gccl.Stream {
	registry.Lock()
	defer registry.Unlock()
	registry.next++
	h := handleBase + registry.next
	registry.streams[h] = s
	return h
}

// Lookup returns the stream a handle names on device ordinal: that
// device's default stream for 0, else a registered stream (registered
// handles name one stream whichever device looks them up). An unknown
// handle gives gccl.ErrInvalidArgument naming "stream".
func Lookup(ordinal int, h gccl.Stream) (*Stream, error) {
	if h == 0 {
		return Default(ordinal), nil
	}
	registry.RLock()
	s, ok := registry.streams[h]
	registry.RUnlock()
	if !ok || s == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "stream",
			"unknown host stream handle %#x; use a stream from Device.NewStream that was not destroyed", uintptr(h))
	}
	return s, nil
}

// Unregister forgets a handle and returns the stream it named. It does not
// close the stream.
func Unregister(h gccl.Stream) (*Stream, error) {
	if h == 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "stream", "the default stream (0) cannot be destroyed")
	}
	registry.Lock()
	defer registry.Unlock()
	s, ok := registry.streams[h]
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidArgument, "stream",
			"unknown host stream handle %#x; was it destroyed already?", uintptr(h))
	}
	delete(registry.streams, h)
	return s, nil
}
