// Package mpi holds gccl's MPI integration tests (testing tier 2). They are
// ordinary Go tests that bootstrap through mpiboot: `go test ./test/mpi`
// runs them as a single process (an MPI singleton), and test/run.sh runs the
// compiled test binary under mpirun with 1, 2, 3, 4 and 8 processes, each
// process one communicator rank, on the host backend (or on GPUs, from the
// GPU bundle).
//
// Every process must make the same calls in the same order, so the tests
// never stop half way through a sequence of collectives because of a wrong
// value: they record mismatches and agree on the outcome over MPI at the
// end. Inputs are random (seeded per case and rank, so that each process
// can compute every rank's input and the reference result), outputs are
// poisoned before each operation, and every element is checked.
package mpi
