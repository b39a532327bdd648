// Package engine is the per-communicator engine: it turns operations into
// plans (package algo), connects to peers through the transports, and runs
// the plans on a backend.
//
// New exchanges every rank's transport address over the communicator's
// bootstrap; connections are made on first use, all the peers an operation
// needs at once (each Connect waits for the peer's, so one-by-one could wait
// in a cycle). Launch submits one communicator's ops; LaunchGroup submits a
// group over several communicators, one launch per engine. Every op is
// validated before anything is submitted, with *gccl.Error values that name
// the argument at fault.
//
// A launch takes a ticket in the engine's issue order and its task waits for
// its turn, so operations run in the same order on every rank even when they
// are spread over several streams. Within a launch the collectives run in
// issue order, then the point-to-point ops run concurrently, one goroutine
// per peer and direction, so all-to-all patterns cannot deadlock.
//
// The host backend (HostBackend) enqueues one task per launch on the host
// stream. The task executes the plan with a runner: sends are posted to a
// goroutine per peer and complete when the peer took the bytes, receives
// reduce straight out of the transport's pieces, and a step that writes a
// range first waits for the posted sends still reading it. A failed task
// records the engine's async error (AsyncError) and the stream's Synchronize
// returns it. Every wait is bounded by Config.Timeout and cut short by Abort.
//
// Avg reduces as Sum then divides by the rank count; operators made by
// CreatePreMulSum reduce as Sum then scale by their scalar. The arithmetic
// is DefaultReducer (package internal/reduce: every data type and operator)
// unless Config.Reducer replaces it.
//
// Drain waits for every launched operation and returns the async error;
// comm.Finalize calls it before its closing barrier.
//
// The Backend interface is the seam for the GPU backend, which launches
// kernels instead of host tasks.
package engine
