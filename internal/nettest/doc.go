// Package nettest holds helpers for the tests of the socket transport and of
// the fault injection under it (transport/internal/net, transport/fault):
// connected loopback TCP socket pairs and seeded random payloads. It is
// imported by tests only.
package nettest
