// Package graph is gccl's CUDA graph bookkeeping.
//
// Every gccl operation may be enqueued on a stream that an application is
// capturing into a CUDA graph (any capture mode), and the graph may then
// be launched many times; captured and eager operations may be mixed on
// one communicator. Whether an operation is captured is a collective
// property, as in NCCL: every rank captures it, or none does.
//
// Info and Capturing tell the engine whether a stream is capturing
// (cuStreamGetCaptureInfo), so that it records work instead of running it
// and never synchronises the host inside a captured operation: no host
// waits, no stream or event synchronisation, nothing that would
// invalidate the capture.
//
// Resources that a captured operation uses must live as long as the
// graph, not as long as the call. RetainForGraph gives a release function
// to the graph being captured through a CUDA user object; the driver runs
// it when the graph and all its instantiations are destroyed. Package
// bufreg builds graph registration on it: with GCCL_GRAPH_REGISTER=1 (the
// default; NCCL_GRAPH_REGISTER is accepted) buffers used in a captured
// operation are registered for the graph's lifetime and released when the
// graph is destroyed (RegisterEnabled reads the variable).
//
// Failures are *gccl.Error values: an invalidated capture is
// gccl.ErrInvalidUsage, driver failures gccl.ErrUnhandledCuda.
package graph
