//go:build race

package random

// The race detector slows gccl about 30-fold: shorter sequences, smaller
// counts.
func init() {
	defaultOps = 100
	defaultMaxCount = 1 << 14
}
