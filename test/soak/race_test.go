//go:build race

package soak

// The race detector slows the soak about 30-fold: a shorter default.
func init() { defaultOps = 60 }
