// Package check is gccl-perf's correctness check of one operation at one
// size on one rank, as nccl-tests checks NCCL: random inputs that any range
// of any rank's can be made alone (Inputs), an output poisoned with the
// complement of the expected value before the run (Stage), and after it
// the count of elements that differ from a reference (Verify; CountWrong:
// exact for integers, a relative tolerance for floats, from
// internal/reduce).
package check
