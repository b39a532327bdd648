//go:build mpich

package mpiboot

// MPICH, selected with `go build -tags mpich`: its pkg-config module is "mpich".

/*
#cgo pkg-config: mpich
*/
import "C"
