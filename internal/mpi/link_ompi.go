//go:build cgo && !mpich

package mpi

// Open MPI (the default): its pkg-config module is "ompi" everywhere Open MPI
// is installed, while "mpi" exists only where Debian's alternatives point it
// at one implementation or the other.

/*
#cgo pkg-config: ompi
*/
import "C"

// What this binary links, for mpiboot's launcher check.
const (
	BuiltFor    = "Open MPI"
	RebuildHint = "go build -tags mpich for MPICH"
)
