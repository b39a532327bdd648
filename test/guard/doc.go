// Package guard holds tests of gccl's house rules that no single package
// can check about itself: today, that cgo is confined to one package per C
// library. It has no code of its own; go test runs the checks over the
// module's source tree.
package guard
