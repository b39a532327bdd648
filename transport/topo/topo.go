package topo

import (
	"hash/fnv"
	"os"
	"strings"
	"sync"

	"github.com/gccl/gccl/internal/env"
)

// bootIDPath is where Linux publishes the id of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

var (
	hashOnce sync.Once
	hashVal  uint64
)

// HostHash returns the hash identifying this host: GCCL_HOSTID (or
// NCCL_HOSTID) when set, else the host name and the boot id. It is computed
// once per process and is never zero.
func HostHash() uint64 {
	hashOnce.Do(func() { hashVal = HashIdentity(Identity()) })
	return hashVal
}

// Identity returns the string HostHash hashes: the GCCL_HOSTID or NCCL_HOSTID
// override, or "hostname/boot-id" (the boot id part is left empty where the
// kernel does not publish one).
func Identity() string {
	if v := env.Get().HostID; v != "" {
		return v
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	boot, err := os.ReadFile(bootIDPath)
	if err != nil {
		boot = nil
	}
	return host + "/" + strings.TrimSpace(string(boot))
}

// HashIdentity hashes a host identity with 64-bit FNV-1a. Zero is reserved for
// "unknown", so a zero hash is mapped to one.
func HashIdentity(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
}

// SameHost reports whether two host hashes name the same host. Zero (unknown)
// never matches anything, so an unpublished hash falls back to sockets.
func SameHost(a, b uint64) bool { return a != 0 && a == b }
