// Package docs checks that the documentation stays in step with the code:
// the README's environment table and its program, the examples' imports,
// the build without cgo, and docs/architecture.md's package table against
// go list. It has no code of its own.
package docs
