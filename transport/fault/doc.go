// Package fault injects faults into gccl transports, for tests.
//
// Wrap puts a transport.Conn behind a seeded fault injector that, with the
// configured probabilities, drops a message, delays it, corrupts one bit of
// it or closes the connection. The corruption Wrap injects sits above the
// transport's framing, so the transport cannot see it: it tests the layers
// above (a checksum in a test's payload, a collective's result check).
//
// WrapNet does the same to a net.Conn, below the framing of the socket
// network provider (transport/internal/net, behind
// transport/network/socket): there the transport's CRC32C checks (frame
// headers always, payloads with GCCL_SOCKET_CHECKSUM) must catch every
// corrupted or dropped byte, and TestWireFaultsNeverDelivered uses it to
// prove they do. The same seed gives the same faults for the same
// sequence of calls.
package fault
