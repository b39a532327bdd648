// Package colltest is the in-process test harness of the operation
// packages (coll, p2p, group): a World is the ranks of one communicator
// made by comm.InitRankConfig, one goroutine per rank, with a host device
// (always: tests check results through host views of the buffers),
// a stream and a buffer arena per rank. Operations are non-blocking, so a
// test issues every rank's share from one goroutine and then calls Sync.
//
// Buffers come poisoned (random bytes) so that a test that checks every
// element notices an element the operation failed to write.
package colltest
