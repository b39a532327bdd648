// Package multihost is testing tier 3: gccl's collectives, point-to-point
// patterns, groups, a killed rank and a cut link across simulated hosts
// (internal/testbed: network and UTS namespaces on a bridge, one machine).
//
// The tests start the test binary itself as the ranks (TestRank, which
// does nothing elsewhere), R of them in each of H hosts, found through
// gccl's socket bootstrap, with GCCL_NET set to each provider under test
// (-multihost.net; "socket" today). Between hosts the ranks talk over the
// veth links, within a host over shared memory. Every result is checked
// element by element against internal/reduce's reference (test/harness),
// with random inputs and poisoned outputs.
//
// The suite needs root and runs only when asked (-multihost, make
// multihost, which make test runs); where namespaces cannot be made it
// fails, saying why.
package multihost
