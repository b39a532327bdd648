// Package reglink connects package comm and package bufreg, neither of
// which can import the other (comm imports the engine, which imports
// bufreg), without either exporting its internals: comm installs Net, with
// which bufreg finds the bootstrap network of a *comm.Comm that Register
// was given.
package reglink

import "github.com/gccl/gccl/internal/bootstrap"

var netOf func(c any) (*bootstrap.Net, bool)

// Install sets the accessor; package comm calls it once, at init.
func Install(net func(c any) (*bootstrap.Net, bool)) { netOf = net }

// Net returns the bootstrap network of c when c is a ready *comm.Comm;
// ok is false when c is no *comm.Comm (or comm is not linked in).
func Net(c any) (n *bootstrap.Net, ok bool) {
	if netOf == nil {
		return nil, false
	}
	return netOf(c)
}
