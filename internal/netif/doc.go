// Package netif chooses the local address a gccl process listens on, for both
// the bootstrap (internal/bootstrap) and the socket network provider
// (transport/network/socket, whose devices are the Interfaces a spec allows).
//
// The choice follows GCCL_SOCKET_IFNAME (NCCL_SOCKET_IFNAME), whose syntax is
// NCCL's: a comma-separated list of interface-name prefixes; "=" before the
// list makes the names exact; "^" before it turns the list into exclusions
// ("^docker,lo" = anything but docker* and lo*). With an empty spec the first
// interface that is up and not loopback wins, else loopback.
//
// Of an interface's addresses the first IPv4 one is taken, else the first
// global IPv6 one: a link-local IPv6 address needs a zone that a unique ID or
// peer record cannot carry. Interfaces are taken in the order the operating
// system lists them, so every caller on a host makes the same choice.
//
// The package reads no environment itself: callers pass the spec (from
// internal/env or their own configuration), which keeps it testable.
package netif
