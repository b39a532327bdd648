// Package perf holds the measurement logic of gccl-perf that needs no
// communicator: the size sweep, nccl-tests' bus-bandwidth factors, robust
// statistics over repeated timings, the result table in nccl-tests' layout,
// CSV output and a PNG plot of bandwidth and latency against size.
//
// The timing loop itself lives in cmd/gccl-perf, which drives gccl (and a
// baseline library) through this package's Result rows.
package perf
