// Package cudafake is an in-process implementation of cuda.Driver on host
// memory, so packages above internal/cuda test their GPU code paths on
// machines with no GPU.
//
// Device memory (package memory, which Fake embeds) is backed by
// shared-memory files and addressed by synthetic device pointers (far
// above any host address), so a host dereference of a device pointer is
// caught instead of silently working.
// Streams are ordered queues, each drained by a goroutine that runs only
// while work is queued (an idle stream holds none); events, host
// functions, stream memory operations (write/wait value), stream capture
// into graphs, graph replay and user objects behave as the driver
// documents. Kernels are Go functions registered by name
// (Fake.RegisterKernel) and run in stream order; they reach memory through
// Fake.Bytes. CUDA IPC handles and exported POSIX FDs refer to the backing
// files, so they work across goroutines and across processes.
//
// Differences from the driver: the current context is process-wide, not
// per OS thread; a capture over several streams (forked into it by
// waiting on an event recorded in it, joined back the same way before it
// ends, else CUDA_ERROR_STREAM_CAPTURE_UNJOINED) records one list of tasks
// in the order they were enqueued, which a replay runs one after the
// other where a real graph may run independent branches at once; an
// IPC handle may be opened in the process that made it; waits give up
// after Config.WaitTimeout with CUDA_ERROR_LAUNCH_TIMEOUT instead of
// hanging.
//
// Live counts the allocations of every fake in the process not yet freed,
// so that internal/leakcheck can fail tests that leave fake memory behind.
package cudafake
