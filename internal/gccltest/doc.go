// Package gccltest holds helpers shared by gccl's own tests: running ranks
// as goroutines of one process, asserting gccl's typed errors, and a
// buffer that concurrent loggers share (SyncBuffer). It is imported by
// tests (and test harnesses) only.
//
// Helpers for a narrower concern live with it: sockets in
// internal/nettest, GPUs in internal/cuda/cudatest, leaks in
// internal/leakcheck.
package gccltest
