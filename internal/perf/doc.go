// Package perf holds the measurement logic of gccl-perf that needs no
// communicator: the size sweep, nccl-tests' bus-bandwidth factors, robust
// statistics over repeated timings, the result table in nccl-tests' layout,
// CSV output, a PNG plot of bandwidth and latency against size, and the
// run summary against a baseline (geometric-mean time ratios in the size
// bands of the project's goals, peak bus bandwidths).
//
// The timing loop itself lives in cmd/gccl-perf and its internal packages,
// which drive gccl (and a baseline library) into this package's rows.
package perf
