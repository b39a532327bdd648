//go:build !cgo

package nccl

import "github.com/gccl/gccl"

// Load without cgo: no library can be opened.
func Load() (*Library, error) {
	return nil, &gccl.Error{Code: gccl.SystemError, Arg: SOName,
		Msg: "built without cgo (CGO_ENABLED=0); rebuild with cgo to load NCCL", Err: ErrNoLibrary}
}
