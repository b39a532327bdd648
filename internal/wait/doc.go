// Package wait is how gccl waits: every wait has a deadline, and a waiter
// on a machine with few cores gives the CPU back quickly instead of
// spinning on it.
//
// A Poller paces a loop that polls a condition it cannot block on (a ring
// slot, a socket read that would block, a CUDA stream or event, an MPI
// request, a driver's "in progress" state). Each Pause first returns at
// once (a few dozen polls at full speed), then yields the processor
// (runtime.Gosched), then sleeps for growing short intervals; it ends the
// wait with an error once the context is done, the deadline has passed or
// the peer's liveness check fails:
//
//	p := wait.Poller{Ctx: ctx, Deadline: wait.Deadline(ctx, timeout), What: "receiving from rank 3"}
//	for !ready() {
//		if err := p.Pause(); err != nil {
//			return err // gccl.ErrTimeout, naming the wait
//		}
//	}
//
// A Poller with no context is bounded by its Deadline alone; callers that
// want their own timeout message test Pause's error and write it. SpinFor
// keeps a latency-critical waiter (a benchmark's timer, a stream wait that
// MPI progress depends on) yielding instead of sleeping for a while.
//
// Deadline picks a wait's deadline (the context's, else now plus the
// configured timeout, else DefaultTimeout) and CtxErr turns a done context
// or a passed deadline into the gccl.ErrTimeout error of a named wait.
//
// A Scope is the context of an operation of many short waits (a host
// launch): a deadline, a parent (Abort) and a cancel, in a value the
// operation reuses. Polling waits read only its Err and Deadline, so it
// costs no allocation and no timer; the first wait that selects on Done
// makes one context.WithDeadline, which Release stops.
package wait
