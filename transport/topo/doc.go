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
// one reached through the CPU).
//
// GPU links (Link, LinkKind): whether one GPU reaches another over NVLink,
// PCIe or not at all, classified from the CUDA driver's P2P attributes
// (peer access, native atomics; the NVLink/PCIe split is an inference, see
// Link), and Agree, the link both ranks of a pair take from their two
// views of it. The GPU backend records each peer's link at setup.
package topo
