// Package hoststream implements host streams: the host backend's equivalent
// of CUDA streams.
//
// A Stream is an ordered work queue executed by one goroutine. Work is
// enqueued as func() error tasks that run strictly in submission order. The
// first task that fails (returns an error or panics) makes the stream's error
// sticky: later tasks are skipped, and Query and Synchronize report that
// error, much as a CUDA stream reports a sticky launch failure.
//
// Events mark a point in a stream. Event.Query and Event.Wait observe when
// the stream has run everything enqueued before the event, and
// Stream.WaitEvent orders one stream after a point in another, as
// cudaStreamWaitEvent does. A stream that waits on a failed event inherits
// the failure, since the work it depends on did not happen.
//
// Close releases a stream the way cudaStreamDestroy does: it returns at once,
// the work already enqueued still runs, and the goroutine exits when the
// queue is empty. An open stream's goroutine waits, parked, up to a second
// for new work before it exits, so that an idle stream holds no goroutine
// for long while work launched now and then starts none (a goroutine's
// stack grows by copies to the depth of a launch). Enqueue on a closed stream returns gccl.ErrInvalidUsage.
//
// The registry maps gccl.Stream handles (the values the public API passes
// around) to *Stream values: Register, Lookup and Unregister. Handles are
// never 0; the handle 0 names the default stream of the device (ordinal)
// that looks it up, created on first use, so that code written for CUDA's
// legacy default stream, which is per device, also runs on the host backend.
//
// Every wait takes a context or a deadline; an expired one gives
// gccl.ErrTimeout. Where host streams spin (package futex: GCCL_HOST_SPIN,
// StreamSpinTime: none where ranks are more than half the CPUs) the worker polls that long for new work
// before it parks, and Synchronize polls that long before it sleeps, so
// that a launch and its synchronisation cost no goroutine wake-up.
package hoststream
