package socket_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/network/socket"
)

// Using a provider directly: rank 0 listens and publishes its handle (through
// the bootstrap, in gccl), rank 1 connects to it on channel 0, rank 0
// accepts, and one tagged transfer moves bytes between registered, pinned
// buffers. package transport does the same for every peer and channel; a
// new provider is written against the same calls and checked with
// networktest.Run.
func Example() {
	var p network.Provider = socket.New(socket.Options{IfName: "lo"})
	cfg := network.Config{CommID: [16]byte{1}, Secret: [16]byte{2}, Timeout: 10 * time.Second}
	ctx := context.Background()

	ln, err := p.Listen(0, cfg) // rank 0, device 0
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	cfg1 := cfg
	cfg1.Rank = 1
	send, err := p.Connect(ctx, 0, ln.Handle(), cfg1, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer send.Close()
	recv, err := ln.Accept(ctx, network.Peer{Rank: 1, Channel: 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer recv.Close()

	out, in := []byte("hello over TCP"), make([]byte, 64)
	var pin runtime.Pinner // registered Go memory must not move while in use
	pin.Pin(&out[0])
	pin.Pin(&in[0])
	defer pin.Unpin()
	sm, _ := send.Register(network.HostRegion(out))
	rm, _ := recv.Register(network.HostRegion(in))
	rq, _ := recv.Irecv(network.HostRegion(in), rm, 42)
	sq, _ := send.Isend(network.HostRegion(out), sm, 42)
	if _, err := sq.(network.Waiter).Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	n, err := rq.(network.Waiter).Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes: %s\n", n, in[:n])
	// Output: 14 bytes: hello over TCP
}
