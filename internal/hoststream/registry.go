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
	streams map[gccl.Stream]*Stream
	next    gccl.Stream
}{streams: map[gccl.Stream]*Stream{}}

var defaultStream = sync.OnceValue(New)

// Default returns the process-wide default stream, which the handle 0
// names. It is never closed.
func Default() *Stream { return defaultStream() }

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

// Lookup returns the stream a handle names: the default stream for 0, else
// a registered stream. An unknown handle gives gccl.ErrInvalidArgument
// naming "stream".
func Lookup(h gccl.Stream) (*Stream, error) {
	if h == 0 {
		return Default(), nil
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
