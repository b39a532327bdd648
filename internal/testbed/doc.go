// Package testbed simulates several hosts on one Linux machine, for the
// multi-host tests (test/multihost) and benchmarks (scripts/multihost-perf.sh)
// of gccl: testing tier 3 of the design.
//
// A host is a network namespace and a UTS namespace (its own host name, so
// gccl's host hash tells the hosts apart and uses sockets between them, and
// shared memory only within one). Each host's eth0 is one end of a veth
// pair whose other end is a port of bridge br0 in a switch namespace of its
// own; host i has address 10.77.0.(i+1)/24 and its loopback up. Nothing is
// added to the machine's own network namespace, unless Config.Gateway asks
// for a veth pair from it to the bridge (the subnet's .254, on the first
// 10.77.k.0/24 it does not use): mpirun's PMIx server is reached that way. Links may be shaped (a rate
// through tc's tbf, a delay through netem); shaping without tc, or with a
// kernel that lacks the qdisc, is an error.
//
// Everything is made from Go with route netlink (no ip(8): the GPU
// machine has none). Each namespace lives as long as a holder process: the
// creating program re-executes itself in new namespaces with
// GCCL_BED_HOLDER set, and this package's init makes that process set its
// host name, bring its loopback up and wait for its standard input to
// close. Commands run in a host through Bed.Start (an OS thread enters the
// host's namespaces and forks) or Exec (used by cmd/gccl-bed exec, the
// wrapper mpirun runs per rank).
//
// Close kills every process in the bed's namespaces and the holders, which
// takes the namespaces, the veth pairs and the bridge with them. A holder
// also ends when its creator dies (its standard input closes; the parent
// death signal is SIGKILL), and each bed records its processes under
// /run/gccl-testbed, where the next New removes whatever a crashed creator
// left. New fails with ErrNoNamespaces when the kernel refuses namespaces
// (not root): never a silent pass.
//
// The ranks of a job (Launch) find each other through gccl's own socket
// bootstrap: rank 0 makes the unique ID and writes it to a file of the
// bed's state directory, the others read it (JoinFromEnv).
package testbed
