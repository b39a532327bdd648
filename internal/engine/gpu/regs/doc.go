// Package regs is the GPU backend's view of its communicator's buffer
// registrations (internal/regcache: the cache the communicator owns and
// hands the backend in its configuration): which registrations cover an operation's
// buffers (View.Find), what the ranks agree on while a stream is being
// captured, registering buffers for the graph's lifetime where they do not
// (View.Agree, NCCL's graph registration), and holding the registrations
// while the operation may run (View.Hold): until an event recorded after
// it completed, polled by Deregister, or for the lifetime of the graph.
// Key names the registrations and offsets of an operation, which the
// kernels compare across the ranks before touching a peer's memory.
//
// The registrations themselves belong to the communicator, which releases
// them when it is destroyed; the view owns only the completion events of
// its holds, which Close destroys.
package regs
