package topo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]CPUSet{
		"0-3,8-11\n": {0, 1, 2, 3, 8, 9, 10, 11},
		"5":          {5},
		"":           nil,
		"\n":         nil,
		"3,1-2,2":    {1, 2, 3},
		"0-0":        {0},
	} {
		got, err := ParseCPUList(in)
		require.NoError(t, err, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
	for _, bad := range []string{"garbage", "0-", "-1", "3-1", "1,,2", "0x3", "+1", "01", "1-99999999999", "65536", "0-3 8", "\x00"} {
		_, err := ParseCPUList(bad)
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "%q", bad)
	}
}

func TestCPUSetStringIntersect(t *testing.T) {
	s := CPUSet{0, 1, 2, 3, 8, 9, 10, 11, 13}
	assert.Equal(t, "0-3,8-11,13", s.String())
	assert.Equal(t, "", CPUSet(nil).String())
	back, err := ParseCPUList(s.String())
	require.NoError(t, err)
	assert.Equal(t, s, back)
	assert.Equal(t, CPUSet{2, 3, 13}, s.Intersect(CPUSet{2, 3, 4, 5, 13, 20}))
	assert.Empty(t, s.Intersect(CPUSet{4, 5, 6}), "disjoint sets")
	assert.Empty(t, s.Intersect(nil))
}

// addNodes gives a fake sysfs NUMA nodes with the given CPU lists.
func addNodes(t *testing.T, root string, nodes map[int]string) {
	for n, list := range nodes {
		dir := filepath.Join(root, "devices", "system", "node", "node"+string(rune('0'+n)))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cpulist"), []byte(list+"\n"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "devices", "system", "node", "online"), []byte("0-1\n"), 0o644))
}

func TestNodesAndLocalCPUs(t *testing.T) {
	root := fakeSysfs(t)
	nodes, err := Nodes(root)
	require.NoError(t, err)
	assert.Nil(t, nodes, "no node directory: no NUMA")

	addNodes(t, root, map[int]string{0: "0-3,8-11", 1: "4-7,12-15"})
	nodes, err = Nodes(root)
	require.NoError(t, err)
	assert.Equal(t, map[int]CPUSet{0: {0, 1, 2, 3, 8, 9, 10, 11}, 1: {4, 5, 6, 7, 12, 13, 14, 15}}, nodes)

	s, err := Detect(root, []string{"0000:03:00.0", "0000:81:00.0"})
	require.NoError(t, err)
	cpus, err := LocalCPUs(root, s.GPUs[1])
	require.NoError(t, err)
	assert.Equal(t, "4-7,12-15", cpus.String(), "no local_cpulist: the NUMA node's CPUs")

	gpu0 := filepath.Join(root, "devices", filepath.Join(s.GPUs[0].Path...), "local_cpulist")
	require.NoError(t, os.WriteFile(gpu0, []byte("0-1\n"), 0o644))
	cpus, err = LocalCPUs(root, s.GPUs[0])
	require.NoError(t, err)
	assert.Equal(t, "0-1", cpus.String(), "local_cpulist first")

	eth0 := s.NICs[0] // on board, no NUMA node
	_, err = LocalCPUs(root, eth0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)

	bad := filepath.Join(root, "devices", "system", "node", "node1", "cpulist")
	require.NoError(t, os.WriteFile(bad, []byte("garbage\n"), 0o644))
	_, err = NodeCPUs(root, 1)
	assert.ErrorIs(t, err, gccl.ErrSystem)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "the parse error stays visible")
	_, err = Nodes(root)
	assert.Error(t, err)
	_, err = NodeCPUs(root, 7)
	assert.ErrorIs(t, err, gccl.ErrSystem, "a node sysfs does not have")
}

// TestNearestAndDeviceAt: two NICs at different distances from a GPU, in
// the "wrong" order, reached through the paths a provider reports.
func TestNearestAndDeviceAt(t *testing.T) {
	root := fakeSysfs(t)
	s, err := Detect(root, []string{"0000:03:00.0", "0000:81:00.0"})
	require.NoError(t, err)
	var nics []Device
	for _, p := range []string{
		"/sys/devices/pci0000:80/0000:80:03.0/0000:82:00.0",                           // eth1, socket 1
		"/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:18.0/0000:05:00.0", // mlx5_0, GPU 0's switch
		"/sys/devices/pci0000:80/0000:80:05.0/virtio3",                                // eth2, below its PCI function
	} {
		d, err := DeviceAt(root, p)
		require.NoError(t, err, p)
		nics = append(nics, d)
	}
	assert.Equal(t, Device{BusID: "0000:80:05.0", NUMA: 1, Path: []string{"pci0000:80", "0000:80:05.0"}}, nics[2])
	assert.Equal(t, 1, Nearest(s.GPUs[0], nics), "GPU 0: the NIC on its switch")
	assert.Equal(t, 2, Nearest(s.GPUs[1], nics), "GPU on socket 1: the NIC fewest hops away under its root")
	nics[1] = Device{} // a device with no PCI path is passed over
	assert.Equal(t, 2, Nearest(s.GPUs[0], nics), "across the CPU: the fewest hops")
	nics[2] = nics[0]
	assert.Equal(t, 0, Nearest(s.GPUs[0], nics), "ties keep the candidates' order")
	assert.Equal(t, -1, Nearest(s.GPUs[0], []Device{{}, {}}))

	for _, bad := range []string{"", "/sys/class/net/lo", "/sys/devices/virtual/net/lo", "/sys/devices/pci0000:00/0000:09:00.0"} {
		_, err := DeviceAt(root, bad)
		assert.Error(t, err, bad)
	}
}

// TestPin narrows a locked thread's affinity to CPUs it already has (so
// it changes nothing else on a shared machine), reads the mask back, and
// checks that unpin restores it.
func TestPin(t *testing.T) {
	all, err := ThreadAffinity()
	require.NoError(t, err)
	require.NotEmpty(t, all)
	unpin, err := Pin(nil)
	require.NoError(t, err, "empty: nothing to do")
	unpin()

	type masks struct{ pinned, after CPUSet }
	done := make(chan masks)
	errs := make(chan error, 2)
	for _, want := range []CPUSet{all[:1], all} {
		go func() {
			var m masks
			defer func() { done <- m }()
			unpin, err := Pin(want)
			if err != nil {
				errs <- err
				return
			}
			if m.pinned, err = ThreadAffinity(); err != nil {
				errs <- err
			}
			unpin()
			if m.after, err = ThreadAffinity(); err != nil {
				errs <- err
			}
		}()
		m := <-done
		require.Empty(t, errs)
		assert.Equal(t, want, m.pinned, "the pinned thread runs on the CPUs it was given")
		assert.Equal(t, all, m.after, "unpin restores the mask")
	}

	after, err := ThreadAffinity()
	require.NoError(t, err)
	assert.Equal(t, all, after, "this goroutine's thread keeps its mask")

	go func() {
		_, err := Pin(CPUSet{MaxCPU - 1})
		errs <- err
	}()
	assert.ErrorIs(t, <-errs, gccl.ErrInvalidArgument, "no CPU the mask can name")
}
