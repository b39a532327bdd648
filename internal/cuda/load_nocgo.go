//go:build !cgo

package cuda

import "github.com/gccl/gccl"

// load without cgo: the driver cannot be reached, so every GPU path falls
// back as if no driver were installed.
func load() (Driver, error) {
	return nil, &gccl.Error{Code: gccl.SystemError, Arg: "libcuda.so.1",
		Msg: "built without cgo (CGO_ENABLED=0); rebuild with cgo to use GPUs", Err: ErrNoDriver}
}
