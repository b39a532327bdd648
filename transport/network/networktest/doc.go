// Package networktest is the conformance suite of network providers
// (transport/network): every provider runs it from a test of its own,
//
//	func TestConformance(t *testing.T) {
//		networktest.Run(t, func() network.Provider { return socket.New(socket.Options{IfName: "lo"}) })
//	}
//
// Run checks what package transport relies on: devices with honest
// properties; listen, connect and accept in any order; ordered tagged
// transfers of 0, 1, 7 and 1000003 random bytes, every byte checked, and a
// receive larger than the transfer; as many requests in flight as the device
// allows, posted before the other side posts any; a wrong secret or
// communicator id refused with a gccl error and never accepted; Reject and a
// peer's Close turning into gccl.ErrRemote; Accept's and Waiter's deadlines
// turning into gccl.ErrTimeout (an expired Wait leaving the request
// usable); bad regions refused with gccl.ErrInvalidArgument; and Close
// releasing every goroutine and file descriptor (internal/leakcheck). Run
// them with -race where the provider's cgo allows.
//
// The suite connects ranks through the provider's first device; set the
// provider's own device selection (GCCL_SOCKET_IFNAME=lo, UCX_NET_DEVICES)
// to a local one.
package networktest
