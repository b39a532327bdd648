// Package topo answers the topology questions the transports need on the host
// backend: which ranks share a host (and so may talk through shared memory).
//
// A host is identified by a 64-bit hash of its host name and the kernel's boot
// id (/proc/sys/kernel/random/boot_id), so two containers or two boots of one
// machine that happen to share a short host name are not confused. GCCL_HOSTID
// (or NCCL_HOSTID) replaces that identity, for launchers that know better.
//
// GPU topology (NVLink, PCIe switches, NUMA nodes, NIC paths) is not detected
// here yet; on the host backend only "same host or not" matters.
package topo
