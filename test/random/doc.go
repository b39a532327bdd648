// Package random is gccl's seeded random-sequence test: every rank draws the
// same sequence of operations from a seed and runs it, and every element of
// every result is checked.
package random
