//go:build cgo && mpich

package mpiboot

// MPICH, selected with `go build -tags mpich`: its pkg-config module is "mpich".

/*
#cgo pkg-config: mpich
*/
import "C"

// builtFor names the MPI this binary links, for launcherMismatch.
const (
	builtFor    = "MPICH"
	rebuildHint = "go build without -tags mpich for Open MPI"
)
