// Package lib is what gccl-perf measures: a library (gccl itself, or a
// baseline it is compared with in the same run) and the call every library
// runs, the same buffers and arguments for all of them.
//
// A Library says what it supports; it runs either on the host backend
// (HostRunner: one operation to completion, timed on the host) or on a
// CUDA stream (StreamLauncher: enqueued, timed by the run's events), or
// both. A Baseline is a Library that is closed at the end of the run, and
// an Aborter one that can give up without waiting for its peers. Gccl runs
// the calls through gccl's public API.
package lib
