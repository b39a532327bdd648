// Package graph is how gccl operations behave in CUDA graphs.
//
// Every gccl operation may be enqueued on a stream that an application is
// capturing into a CUDA graph (any capture mode), and the graph may then
// be launched many times; captured and eager operations may be mixed on
// one communicator. Whether an operation is captured is a collective
// property, as in NCCL: every rank captures it, or none does.
//
// A captured operation records work instead of running it and never
// synchronises the host: no host waits, no stream or event
// synchronisation, nothing that would invalidate the capture. Resources
// that it uses live as long as the graph, not as long as the call: gccl
// hands their release to the graph being captured (a CUDA user object),
// and the driver runs it when the graph and all its instantiations are
// destroyed. With GCCL_GRAPH_REGISTER=1 (the default; NCCL_GRAPH_REGISTER
// is accepted) buffers used in a captured operation are registered for the
// graph's lifetime and released when the graph is destroyed
// (RegisterEnabled reads the variable); see package bufreg.
//
// An operation enqueued on a stream whose capture was invalidated (an
// unsupported call while capturing) fails with gccl.ErrInvalidUsage, or
// with gccl.ErrUnhandledCuda where the driver's launch reports it
// (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); nothing of it will run, and the
// communicator stays usable: end the capture and capture again.
package graph
