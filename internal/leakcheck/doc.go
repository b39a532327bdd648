// Package leakcheck fails a test binary whose tests leave resources
// behind: goroutines still running, file descriptors still open, gccl's
// shared-memory files of this process still in /dev/shm, and allocations of
// the fake CUDA driver (cudafake) not freed.
//
// A package opts in from its TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
//
// Main takes a Snapshot before the tests and, when they passed, compares
// the process with it afterwards: anything new is a leak, reported with
// what it is (a goroutine's stack, an fd's target, a file name) and the
// binary exits with status 1. Resources are often released
// asynchronously (a goroutine returns a little after the Close that told
// it to), so the comparison is retried for a grace period before it
// fails. When the tests failed, Main reports nothing more: a failed test
// may well leave things behind, and its own failure says more.
//
// Only this process's resources are counted, so test binaries running side
// by side do not disturb each other. The Go runtime's own descriptors
// (the network poller's epoll and eventfd) and goroutines (signal
// handling) are not leaks.
package leakcheck
