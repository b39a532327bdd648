// Package nettest holds helpers for the tests of the socket transport and of
// the fault injection under it (transport/net, transport/fault, test/fault):
// connected loopback TCP socket pairs and seeded random payloads. It is
// imported by tests only.
package nettest
