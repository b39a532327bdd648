// Package topo answers the topology questions the transports need on the host
// backend: which ranks share a host (and so may talk through shared memory).
//
// A host is identified by a 64-bit hash of its host name and the kernel's boot
// id (/proc/sys/kernel/random/boot_id), so two containers or two boots of one
// machine that happen to share a short host name are not confused. GCCL_HOSTID
// (or NCCL_HOSTID) replaces that identity, for launchers that know better.
//
// PCI topology (Detect, over a sysfs root so tests use a fake tree): each
// GPU's path from its PCI root through the bridges and switches above it,
// resolved through sysfs's symlinks, its NUMA node, and the NICs that
// class/net and class/infiniband tie to PCI devices; NearestNIC picks the
// NIC with the fewest PCI hops from a GPU (one under the same root before
// one reached through the CPU), Nearest the same among any candidates, and
// DeviceAt finds the device at a path a network provider reports
// (network.Properties.PCIPath) under the same root.
//
// CPUs (CPUSet, ParseCPUList for the kernel's "0-3,8-11" lists): NodeCPUs
// and Nodes read the NUMA nodes' CPUs (devices/system/node/node<N>/cpulist),
// LocalCPUs the CPUs near a PCI device (its local_cpulist, else its node's),
// all under the sysfs root. ThreadAffinity is the calling thread's
// affinity mask, and Pin locks a long-lived goroutine to its OS thread and
// narrows that thread's mask (sched_setaffinity, through
// golang.org/x/sys/unix); the thread ends with the goroutine, so no other
// goroutine runs with the narrowed mask. package transport uses them to
// place a rank's network progress near its GPU or NIC.
//
// GPU links (Link, LinkKind): whether one GPU reaches another over NVLink,
// PCIe or not at all, classified from the CUDA driver's P2P attributes
// (peer access, native atomics; the NVLink/PCIe split is an inference, see
// Link), and Agree, the link both ranks of a pair take from their two
// views of it. The GPU backend records each peer's link at setup.
package topo
