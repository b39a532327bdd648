// Package perftest is what the tests of gccl-perf's packages share: a GPU
// on the fake driver (internal/cuda/cudafake), a library on it whose
// operations are copies of known length in stream order, and the
// registration of a one-rank communicator. No GPU is needed.
package perftest
