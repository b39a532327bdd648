//go:build cgo && mpich

package mpi

// MPICH, selected with `go build -tags mpich`: its pkg-config module is "mpich".

/*
#cgo pkg-config: mpich
*/
import "C"

// What this binary links, for mpiboot's launcher check.
const (
	BuiltFor    = "MPICH"
	RebuildHint = "go build without -tags mpich for Open MPI"
)
