// Package socket is gccl's TCP network provider (network.Provider,
// GCCL_NET=socket): the provider that connects any two ranks, and what
// GCCL_NET=auto picks where no RDMA device is usable.
//
// Its devices are the network interfaces that GCCL_SOCKET_IFNAME
// (NCCL_SOCKET_IFNAME) allows, that are up and have a usable address, in the
// order internal/netif chooses them (loopback last unless named); their
// Properties give the link speed from /sys/class/net/IF/speed where the
// kernel reports one (0 otherwise) and the PCI path where the interface has
// a PCI device. The handle a listener publishes is its address and port
// (versioned). Connect checks its device argument but binds no source
// address: the kernel's routing picks it, as for any TCP client.
//
// A connection is a control socket and GCCL_SOCKET_NTHREADS ×
// GCCL_NSOCKS_PERTHREAD data sockets (NCCL_SOCKET_NTHREADS,
// NCCL_NSOCKS_PERTHREAD; 2 × 1 by default), each dialled by the sending
// rank and authenticated (the communicator id and a challenge-response proof
// of the unique ID's secret, which never crosses the wire; see
// transport/internal/net). A transfer of up to 128 KiB travels inline on the
// control socket: Isend writes header and bytes there itself, without a
// hand-off to another goroutine, and without blocking (what the socket
// does not take at once goes to a writer goroutine). A larger one sends
// its header on the control socket and is cut into pieces (about its size
// over the data sockets, 64 KiB to 4 MiB each), piece k on data socket k
// mod n; GCCL_SOCKET_NTHREADS helper goroutines per connection write them
// (on the receiving side, read them straight into the posted receive), each
// driving GCCL_NSOCKS_PERTHREAD sockets, on network.Config.CPUs where
// the endpoint placed the connection (near its GPU or NIC). Every frame
// header carries a sequence number and a CRC32C of the header, so a
// corrupted, lost or desynchronised frame is an error, never data or a
// hang; with GCCL_SOCKET_CHECKSUM=1 (Options.Checksum) every frame also
// carries a CRC32C of its payload, which the receiver checks (a mismatch
// is gccl.ErrSystem); off by default: payloads rely on TCP's checksum,
// as NCCL's and MPI's do. Nagle's algorithm is off on every socket.
//
// The receiving side's control reader matches each transfer with the next
// posted Irecv and checks its tag and size: a mismatch is
// gccl.ErrInvalidUsage naming both. A receiver's Fail (network.Failer) sends
// its error back on the control socket, where the sender's Isends and
// Refusal (network.Refuser) find it; requests implement network.Waiter.
// A RecvComm is a network.Poller: PollOnly raises its control socket's
// SO_RCVLOWAT, for a caller that only Tests (the GPU proxy), so that a
// frame's arrival wakes no goroutine; Test reads it. A Wait that spins on
// a receive (GCCL_HOST_SPIN) raises it too, and it stays raised until a
// Wait is about to sleep on the connection, which lowers it first.
package socket
