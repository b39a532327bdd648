package topo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSysfs builds a sysfs tree shaped like a two-socket GPU server's: two
// GPUs and an InfiniBand NIC behind one PCIe switch on socket 0, a third
// GPU and two Ethernet NICs on socket 1's root (one virtio), an on-board
// NIC with no NUMA node, and loopback (no device). Links are relative, as the kernel's are.
func fakeSysfs(t *testing.T) string {
	root := t.TempDir()
	dev := func(path, numa string) {
		dir := filepath.Join(root, "devices", path)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "numa_node"), []byte(numa+"\n"), 0o644))
		bus := filepath.Base(path)
		link := filepath.Join(root, "bus", "pci", "devices", bus)
		require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
		require.NoError(t, os.Symlink(filepath.Join("..", "..", "..", "devices", path), link))
	}
	const sw = "pci0000:00/0000:00:01.0/0000:01:00.0" // root port, switch upstream port
	dev(sw+"/0000:02:08.0/0000:03:00.0", "0")         // GPU 0
	dev(sw+"/0000:02:10.0/0000:04:00.0", "0")         // GPU 1
	dev(sw+"/0000:02:18.0/0000:05:00.0", "0")         // mlx5_0
	dev("pci0000:80/0000:80:01.0/0000:81:00.0", "1")  // GPU 2
	dev("pci0000:80/0000:80:03.0/0000:82:00.0", "1")  // eth1
	dev("pci0000:00/0000:00:1f.6", "-1")              // eth0, on board
	// class/<c>/<name> is a link to the device's <c>/<name> directory,
	// whose "device" links back up to the PCI device.
	class := func(c, name, devPath string) {
		dir := filepath.Join(root, "devices", devPath, c, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.Symlink(filepath.Join("..", ".."), filepath.Join(dir, "device")))
		link := filepath.Join(root, "class", c, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
		require.NoError(t, os.Symlink(filepath.Join("..", "..", "devices", devPath, c, name), link))
	}
	class("infiniband", "mlx5_0", sw+"/0000:02:18.0/0000:05:00.0")
	class("net", "eth1", "pci0000:80/0000:80:03.0/0000:82:00.0")
	class("net", "eth0", "pci0000:00/0000:00:1f.6")
	// A virtio NIC: its "device" is the virtio node below the PCI function.
	dev("pci0000:80/0000:80:05.0", "1")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "devices", "pci0000:80/0000:80:05.0/virtio3"), 0o755))
	class("net", "eth2", "pci0000:80/0000:80:05.0/virtio3")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "devices", "virtual", "net", "lo"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join("..", "..", "devices", "virtual", "net", "lo"), filepath.Join(root, "class", "net", "lo")))
	return root
}

func TestDetect(t *testing.T) {
	s, err := Detect(fakeSysfs(t), []string{"00000000:03:00.0", "0000:04:00.0", "00000000:81:00.0"})
	require.NoError(t, err)
	want := &System{
		GPUs: []Device{
			{BusID: "0000:03:00.0", Name: "0000:03:00.0", NUMA: 0, Path: []string{"pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:03:00.0"}},
			{BusID: "0000:04:00.0", Name: "0000:04:00.0", NUMA: 0, Path: []string{"pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:10.0", "0000:04:00.0"}},
			{BusID: "0000:81:00.0", Name: "0000:81:00.0", NUMA: 1, Path: []string{"pci0000:80", "0000:80:01.0", "0000:81:00.0"}},
		},
		NICs: []Device{
			{BusID: "0000:00:1f.6", Name: "eth0", NUMA: -1, Path: []string{"pci0000:00", "0000:00:1f.6"}},
			{BusID: "0000:82:00.0", Name: "eth1", NUMA: 1, Path: []string{"pci0000:80", "0000:80:03.0", "0000:82:00.0"}},
			{BusID: "0000:80:05.0", Name: "eth2", NUMA: 1, Path: []string{"pci0000:80", "0000:80:05.0"}},
			{BusID: "0000:05:00.0", Name: "mlx5_0", NUMA: 0, Path: []string{"pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:18.0", "0000:05:00.0"}},
		},
	}
	assert.Equal(t, want, s)

	for gpu, nic := range []string{"mlx5_0", "mlx5_0", "eth2"} {
		i, ok := s.NearestNIC(gpu)
		require.True(t, ok)
		assert.Equal(t, nic, s.NICs[i].Name, "GPU %d", gpu)
	}
	_, ok := s.NearestNIC(3)
	assert.False(t, ok)

	hops, cross := Hops(s.GPUs[0], s.GPUs[1])
	assert.Equal(t, 4, hops, "GPU 0 and 1 meet at the switch's upstream port")
	assert.False(t, cross)
	hops, cross = Hops(s.GPUs[0], s.GPUs[2])
	assert.Equal(t, 8, hops)
	assert.True(t, cross, "GPU 0 and 2 are under different PCI roots")
}

func TestDetectRejects(t *testing.T) {
	root := fakeSysfs(t)
	_, err := Detect(root, []string{"not-a-bus-id"})
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = Detect(root, []string{"0000:09:00.0"})
	assert.ErrorIs(t, err, gccl.ErrSystem)
	assert.Contains(t, err.Error(), "0000:09:00.0")
	s, err := Detect(t.TempDir(), nil)
	require.NoError(t, err, "a sysfs without NIC classes has no NICs")
	_, ok := s.NearestNIC(0)
	assert.False(t, ok)
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{"00000000:3B:00.0": "0000:3b:00.0", "0000:03:00.1": "0000:03:00.1", " 0001:c1:00.0\n": "0001:c1:00.0"} {
		got, err := normalizeBusID(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"00010000:03:00.0", "0000:03:00.8", "0000:3:00.0", "", "0000:03:00"} {
		_, err := normalizeBusID(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// TestDetectThisHost reads this machine's sysfs: it must parse, and every
// NIC found must sit on a PCI path ending at its bus id.
func TestDetectThisHost(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("no sysfs PCI tree here")
	}
	s, err := Detect("/sys", nil)
	require.NoError(t, err)
	for _, n := range s.NICs {
		require.NotEmpty(t, n.Path, n.Name)
		assert.Equal(t, n.BusID, n.Path[len(n.Path)-1], n.Name)
		t.Logf("%s: %v (NUMA %d)", n.Name, n.Path, n.NUMA)
	}
}
