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
// A Starter task need not wait for the worker: enqueued onto an idle
// stream it starts on the enqueuing goroutine (the host backend sends a
// small launch's messages there). One that started but still waits (for
// peers' messages) is held for a Synchronize, which runs it on its own
// goroutine (and completes events nobody else completes); the worker
// takes it when more work is enqueued, on Query, Release or Close, or
// after one to two milliseconds (watchEvery) if nobody synchronizes.
// A launch and its synchronisation thus run on the caller's goroutine,
// with no hand-off to the worker and back and no wake-up per launch (the
// worker, while tasks are being held, wakes once per watchEvery). A
// Synchronize that runs a task returns when the task does: its waits have
// deadlines of their own. Plain tasks run on the worker only.
//
// Every wait takes a context or a deadline; an expired one gives
// gccl.ErrTimeout. Where host streams spin (package futex: GCCL_HOST_SPIN,
// StreamSpinTime: none where ranks are more than half the CPUs) the
// worker polls that long for new work before it parks, and Synchronize
// polls that long for the worker's task before it sleeps.
package hoststream
