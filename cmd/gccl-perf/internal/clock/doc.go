// Package clock times gccl-perf's libraries, all of a run's libraries by
// the same clock. On the host backend each iteration is timed on the host,
// from launch to completion. On a GPU, work is timed as nccl-tests times
// NCCL: between two CUDA events recorded on the run's stream (Timer),
// eagerly in batches of back-to-back operations (BatchFor), or as
// launches of a CUDA graph that captured -n operations.
//
// A clock also runs the checked run of each size (Once), the same way the
// timed iterations run, so that a graph's result is checked as a graph's.
package clock
