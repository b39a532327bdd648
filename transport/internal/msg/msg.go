package msg

import "github.com/gccl/gccl"

// DescSize is the size of a message's descriptor.
const DescSize = 24

// Desc is a message's descriptor: bytes the sender attaches to a message
// and the receiver sees, with the message's length, before any of its
// bytes. Transports carry it once per message and give it no meaning.
type Desc = [DescSize]byte

// Expect is the accept function of a Recv that takes a message of n
// bytes, whatever its descriptor.
func Expect(n int) func(Desc, int) error {
	return func(_ Desc, got int) error {
		if got != n {
			return gccl.Errorf(gccl.InvalidUsage, "n", "received a message of %d bytes, want %d", got, n)
		}
		return nil
	}
}
