// Package exchange is how the ranks of a gccl-perf run agree: small
// all-gathers over MPI (one rank per process) or between goroutine ranks
// of one process, each round bounded by a deadline, and Agree, which turns
// every rank's report of one measurement (failure, wrong elements,
// iteration times) into the run's: the slowest rank's time per iteration,
// the wrong counts added up, any failure named on every rank.
package exchange
