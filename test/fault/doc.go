// Package fault holds gccl's fault tests: what a user sees when peers die,
// deadlines pass, the wire is corrupted or a communicator is torn down
// with work in flight.
//
// The in-process tests (go test ./test/fault) run several ranks as
// goroutines of one process on the host backend, each with its own
// communicator over the real socket bootstrap and the real transports. They
// check that every wait ends by its deadline with gccl.ErrTimeout, that a
// rank that vanishes (its communicator aborted, its sockets and rings
// closed) turns into gccl.ErrRemote on every survivor, reported both by the
// stream wait helpers and by AsyncError, that Abort returns promptly from
// any goroutine while others are blocked in gccl, and that it frees every
// goroutine, file descriptor and shared-memory file it made.
//
// Wire faults below the TCP transport's framing are tested next to the
// transport, in transport/fault (TestWireFaultsNeverDelivered).
//
// The kill -9 and SIGSTOP harness lives in ./killrank: a program launched
// by mpirun in which one rank kills itself with SIGKILL in the middle of an
// operation, or stops itself with SIGSTOP in the middle of a series of them
// (the others must name it in their timeouts); scripts/fault.sh runs it
// repeatedly under a hard timeout and resumes a stopped rank.
package fault
