package transport

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Paths of the fake server's devices (placeSysfs), as providers report
// them.
const (
	sw0    = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0" // socket 0's PCIe switch
	gpu0   = "0000:03:00.0"                                      // on sw0, NUMA node 0
	gpu1   = "0000:81:00.0"                                      // socket 1's root, NUMA node 1
	mlxDir = sw0 + "/0000:02:18.0/0000:05:00.0"                  // NIC on GPU 0's switch
	ethDir = "/sys/devices/pci0000:80/0000:80:03.0/0000:82:00.0" // NIC on socket 1
)

// placeSysfs builds a two-socket server's sysfs: NUMA node 0 (CPUs 0-3,
// 8-11) with GPU 0 and an InfiniBand NIC behind one PCIe switch, node 1
// (CPUs 4-7, 12-15) with GPU 1 and an Ethernet NIC on its root.
func placeSysfs(t *testing.T) string {
	root := t.TempDir()
	write := func(path, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(s+"\n"), 0o644))
	}
	dev := func(sysPath string, numa int) {
		rel := sysPath[len("/sys/"):]
		write(filepath.Join(root, rel, "numa_node"), strconv.Itoa(numa))
		link := filepath.Join(root, "bus", "pci", "devices", filepath.Base(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
		require.NoError(t, os.Symlink(filepath.Join("..", "..", "..", rel), link))
	}
	dev(sw0+"/0000:02:08.0/"+gpu0, 0)
	dev("/sys/devices/pci0000:80/0000:80:01.0/"+gpu1, 1)
	dev(mlxDir, 0)
	dev(ethDir, 1)
	write(filepath.Join(root, "devices/system/node/node0/cpulist"), "0-3,8-11")
	write(filepath.Join(root, "devices/system/node/node1/cpulist"), "4-7,12-15")
	return root
}

// placeDevs lists the NICs in the "wrong" order: the far one first, a
// virtual one in between.
func placeDevs() ([]network.Properties, []int) {
	return []network.Properties{{Name: "eth1", PCIPath: ethDir}, {Name: "veth0"}, {Name: "mlx5_0", PCIPath: mlxDir}}, []int{0, 1, 2}
}

func cpus(t *testing.T, s string) topo.CPUSet {
	c, err := topo.ParseCPUList(s)
	require.NoError(t, err)
	return c
}

// TestPlaceGPURank: a GPU rank takes the provider's device nearest its
// GPU and runs its progress on the GPU's CPUs, within the process's.
func TestPlaceGPURank(t *testing.T) {
	root := placeSysfs(t)
	devs, cands := placeDevs()
	all := cpus(t, "0-15")

	p := Config{Sysfs: root, GPUBusID: "00000000:03:00.0"}.place(devs, cands, "", all)
	assert.Equal(t, 2, p.dev, p.why)
	assert.Equal(t, "nearest to GPU 0000:03:00.0, 4 PCI hops", p.why)
	assert.Equal(t, "0-3,8-11", p.cpus.String(), p.cpusWhy)

	p = Config{Sysfs: root, GPUBusID: gpu1}.place(devs, cands, "", all)
	assert.Equal(t, 0, p.dev, p.why)
	assert.Equal(t, "4-7,12-15", p.cpus.String(), p.cpusWhy)

	p = Config{Sysfs: root, GPUBusID: gpu0}.place(devs, cands, "", cpus(t, "2-5"))
	assert.Equal(t, "2-3", p.cpus.String(), "within the process's affinity")

	p = Config{Sysfs: root, GPUBusID: gpu0}.place(devs, cands, "", cpus(t, "4-7"))
	assert.Nil(t, p.cpus, "GPU 0's CPUs are all outside the affinity: left alone")
	assert.Contains(t, p.cpusWhy, "left alone")

	p = Config{Sysfs: root, GPUBusID: gpu0, IgnoreCPUAffinity: true}.place(devs, cands, "", cpus(t, "4-7"))
	assert.Equal(t, "0-3,8-11", p.cpus.String(), "GCCL_IGNORE_CPU_AFFINITY: the GPU's CPUs whatever the affinity")

	p = Config{Sysfs: root, GPUBusID: gpu0}.place(devs, cands, "GCCL_SOCKET_IFNAME", all)
	assert.Equal(t, 0, p.dev, "an explicit interface wins")
	assert.Equal(t, "0-3,8-11", p.cpus.String(), "progress still near the GPU")

	p = Config{Sysfs: root, GPUBusID: "0000:99:00.0"}.place(devs, cands, "", all)
	assert.Equal(t, 0, p.dev, "a GPU sysfs does not know: the provider's order")
	assert.Contains(t, p.why, "not in the PCI topology")

	p = Config{Sysfs: root, GPUBusID: gpu0}.place([]network.Properties{{Name: "lo"}, {Name: "veth0"}}, []int{0, 1}, "", all)
	assert.Equal(t, 0, p.dev, "no device has a PCI path: the provider's order")
	assert.Equal(t, "0-3,8-11", p.cpus.String())

	p = Config{Sysfs: root, GPUBusID: gpu0}.place(devs, []int{1, 0}, "", all)
	assert.Equal(t, 0, p.dev, "only the candidates count (auto's RDMA devices)")
}

// TestPlaceHostRank: a host rank prefers a device on the NUMA node of the
// CPUs it runs on, and runs its progress near that device.
func TestPlaceHostRank(t *testing.T) {
	root := placeSysfs(t)
	devs, cands := placeDevs()

	p := Config{Sysfs: root}.place(devs, cands, "", cpus(t, "8-9"))
	assert.Equal(t, 2, p.dev, p.why)
	assert.Equal(t, "on NUMA node 0, where this process runs", p.why)
	assert.Equal(t, "8-9", p.cpus.String(), p.cpusWhy)

	p = Config{Sysfs: root}.place(devs, cands, "", cpus(t, "12-15"))
	assert.Equal(t, 0, p.dev, p.why)
	assert.Equal(t, "12-15", p.cpus.String())

	p = Config{Sysfs: root}.place(devs, cands, "", cpus(t, "0-15"))
	assert.Equal(t, 0, p.dev, "both nodes: the provider's order")

	p = Config{Sysfs: root}.place(devs, cands, "", cpus(t, "99"))
	assert.Equal(t, 0, p.dev, "CPUs on no known node: the provider's order")
	assert.Nil(t, p.cpus, "eth1's CPUs are outside the affinity")

	p = Config{Sysfs: root}.place(devs, []int{1}, "", cpus(t, "0-15"))
	assert.Equal(t, 1, p.dev)
	assert.Nil(t, p.cpus, "a virtual device: nothing to place near")

	p = Config{Sysfs: t.TempDir()}.place(devs, cands, "", cpus(t, "0-15"))
	assert.Equal(t, 0, p.dev, "an empty sysfs: the provider's order")
	assert.Nil(t, p.cpus)
}

// TestPlaceBadSysfs: garbage in sysfs costs the placement, never a panic.
func TestPlaceBadSysfs(t *testing.T) {
	root := placeSysfs(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "devices/system/node/node0/cpulist"), []byte("zero-three\n"), 0o644))
	devs, cands := placeDevs()
	p := Config{Sysfs: root, GPUBusID: gpu0}.place(devs, cands, "", cpus(t, "0-15"))
	assert.Equal(t, 2, p.dev, "the PCI tree still chooses the device")
	assert.Nil(t, p.cpus)
	assert.Contains(t, p.cpusWhy, "unknown")
	p = Config{Sysfs: root}.place(devs, cands, "", cpus(t, "8-9"))
	assert.Equal(t, 0, p.dev, "nodes unreadable: the provider's order")
}
