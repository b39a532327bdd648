//go:build !linux

package topo

import "github.com/gccl/gccl"

// ThreadAffinity is unsupported outside Linux.
func ThreadAffinity() (CPUSet, error) {
	return nil, gccl.Errorf(gccl.SystemError, "affinity", "thread affinity is Linux only")
}

// Pin does nothing outside Linux (see the Linux version).
func Pin(cpus CPUSet) (unpin func(), err error) { return func() {}, nil }
