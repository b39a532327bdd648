// Package soak is gccl's soak test: a long random sequence of operations on
// an in-process host communicator, every result verified, and no resource
// left behind.
//
// Four ranks (goroutines, each with its own communicator over the real
// bootstrap and transports) draw the same sequence of operations from one
// seed: the five collectives, point-to-point ring shifts and all-to-all,
// over every data type and reduction operator, counts from 0 up to 64 Ki
// elements, random roots, in place or not, and sometimes several operations
// in one group. Integer results are compared bit for bit with
// internal/reduce's reference; floating-point data only travels through
// operations that do not compute with it (broadcast, gather, p2p), so it
// too must arrive bit-exact. Goroutine, file-descriptor and /dev/shm counts
// must be the same before and after. The operations are test/harness's
// Cases and Calls, which test/random shares.
//
//	go test ./test/soak                                  # a short run (CI)
//	go test ./test/soak -soak.ops=100000 -timeout=60m    # make soak (scripts/soak.sh)
package soak
