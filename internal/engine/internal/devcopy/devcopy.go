package devcopy

import "github.com/gccl/gccl/internal/cuda"

// Async copies n bytes from src to dst on s, in stream order (captured
// as a copy node when s is capturing); nothing when n is 0 or dst is src.
// The device's context must be current.
func Async(drv cuda.Driver, dst, src uintptr, n int, s cuda.Stream) error {
	if n == 0 || dst == src {
		return nil
	}
	return drv.MemcpyDtoDAsync(dst, src, n, s)
}
