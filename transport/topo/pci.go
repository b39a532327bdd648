package topo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gccl/gccl"
)

// Device is a PCI device as sysfs shows it: its bus id, its path from the
// PCI root down to it, and its NUMA node.
type Device struct {
	BusID string   // "0000:03:00.0"
	Name  string   // a NIC's name (interface or InfiniBand device); a GPU's bus id
	Path  []string // "pci0000:00", the bridges' bus ids, then BusID: the switch hierarchy
	NUMA  int      // -1 where the kernel does not say
}

// System is the PCI topology of a host's GPUs and NICs.
type System struct {
	GPUs []Device // in the order Detect was given them
	NICs []Device // by name
}

// Detect reads the topology under a sysfs root ("/sys", or a test's fake
// tree): each GPU's device under bus/pci/devices, resolved through its
// symlink so the bridges above it show, and every NIC that class/net or
// class/infiniband ties to a PCI device (virtual interfaces have none).
// gpus are the GPUs' PCI bus ids as the CUDA driver gives them
// ("00000000:03:00.0"); a GPU sysfs does not know is an error.
func Detect(sysfs string, gpus []string) (*System, error) {
	s := &System{}
	for i, id := range gpus {
		bus, err := normalizeBusID(id)
		if err != nil {
			return nil, gccl.Errorf(gccl.InvalidArgument, "gpus", "GPU %d: %v", i, err)
		}
		d, err := pciDevice(sysfs, filepath.Join(sysfs, "bus", "pci", "devices", bus))
		if err != nil {
			return nil, gccl.Errorf(gccl.SystemError, "gpus", "GPU %d (%s): %v (is %s a sysfs with this GPU?)", i, bus, err, sysfs)
		}
		d.Name = bus
		s.GPUs = append(s.GPUs, d)
	}
	for _, class := range []string{"net", "infiniband"} {
		nics, err := classDevices(sysfs, class)
		if err != nil {
			return nil, err
		}
		s.NICs = append(s.NICs, nics...)
	}
	slices.SortFunc(s.NICs, func(a, b Device) int { return strings.Compare(a.Name, b.Name) })
	return s, nil
}

// classDevices lists the entries of class/<class> that have a PCI device.
func classDevices(sysfs, class string) ([]Device, error) {
	dir := filepath.Join(sysfs, "class", class)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no InfiniBand on this host
	}
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "sysfs", "listing %s: %v", dir, err)
	}
	var out []Device
	for _, e := range ents {
		d, err := pciDevice(sysfs, filepath.Join(dir, e.Name(), "device"))
		if err != nil {
			continue // a virtual interface (lo, veth, bridges): no PCI device
		}
		d.Name = e.Name()
		out = append(out, d)
	}
	return out, nil
}

// pciDevice resolves link to the device's directory and reads its path
// and NUMA node.
func pciDevice(sysfs, link string) (Device, error) {
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return Device{}, err
	}
	root, err := filepath.EvalSymlinks(filepath.Join(sysfs, "devices"))
	if err != nil {
		return Device{}, err
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return Device{}, fmt.Errorf("%s resolves to %s, outside %s", link, dir, root)
	}
	// The device is the last PCI address on the way down (a virtio NIC's
	// "device" is the virtio node below its PCI function).
	var path []string
	pciDir, cur := "", root
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, c)
		if strings.HasPrefix(c, "pci") || isBusID(c) {
			path = append(path, c)
			pciDir = cur
		}
	}
	if len(path) == 0 || !isBusID(path[len(path)-1]) {
		return Device{}, fmt.Errorf("%s is not a PCI device", dir)
	}
	d := Device{BusID: path[len(path)-1], Path: path, NUMA: -1}
	if b, err := os.ReadFile(filepath.Join(pciDir, "numa_node")); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v >= 0 {
			d.NUMA = v
		}
	}
	return d, nil
}

// isBusID reports whether s is a PCI address "dddd:bb:dd.f" (lower-case
// hex, function 0-7).
func isBusID(s string) bool {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' || s[11] < '0' || s[11] > '7' {
		return false
	}
	for i, c := range []byte(s[:10]) {
		if i != 4 && i != 7 && !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// normalizeBusID turns the CUDA driver's "00000000:03:00.0" (or any case,
// or sysfs's own form) into sysfs's "0000:03:00.0".
func normalizeBusID(id string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(id))
	if dom, rest, ok := strings.Cut(s, ":"); ok && len(dom) > 4 && strings.Trim(dom[:len(dom)-4], "0") == "" {
		s = dom[len(dom)-4:] + ":" + rest
	}
	if !isBusID(s) {
		return "", fmt.Errorf("%q is not a PCI bus id (want dddd:bb:dd.f)", id)
	}
	return s, nil
}

// Hops is the number of PCI links between a and b: up from a to the
// lowest bridge (or root) above both, and down to b. Devices under
// different PCI roots meet only in the CPU: crossRoot is then true and hops
// counts both paths up to their roots.
func Hops(a, b Device) (hops int, crossRoot bool) {
	c := 0
	for c < len(a.Path) && c < len(b.Path) && a.Path[c] == b.Path[c] {
		c++
	}
	return len(a.Path) - c + len(b.Path) - c, c == 0
}

// NearestNIC returns the index in s.NICs of the NIC closest to GPU gpu
// (see Nearest). ok is false when s has no NIC or gpu is out of range.
func (s *System) NearestNIC(gpu int) (nic int, ok bool) {
	if gpu < 0 || gpu >= len(s.GPUs) {
		return -1, false
	}
	nic = Nearest(s.GPUs[gpu], s.NICs)
	return nic, nic >= 0
}

// Nearest returns the index in cands of the device closest to d: fewest
// PCI hops, a device under d's own PCI root before one reached through
// the CPU, one on d's NUMA node before one across nodes, then the first
// in cands. Candidates with no Path (no PCI device) are passed over; -1
// when no candidate has one.
func Nearest(d Device, cands []Device) int {
	rank := func(n Device) (int, int, int) {
		hops, cross := Hops(d, n)
		c, numa := 0, 0
		if cross {
			c = 1
		}
		if n.NUMA != d.NUMA {
			numa = 1
		}
		return c, numa, hops
	}
	best := -1
	for i, n := range cands {
		if len(n.Path) == 0 {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		c1, n1, h1 := rank(n)
		c0, n0, h0 := rank(cands[best])
		if c1 < c0 || c1 == c0 && (n1 < n0 || n1 == n0 && h1 < h0) {
			best = i
		}
	}
	return best
}

// DeviceAt is the PCI device at path, a sysfs device path as network
// providers report it (network.Properties.PCIPath:
// "/sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0", or below the PCI
// function, ".../virtio3"), looked up under the sysfs root, so a test's
// fake tree answers for /sys. Name is left empty.
func DeviceAt(sysfs, path string) (Device, error) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(path)), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "devices" && strings.HasPrefix(parts[i+1], "pci") {
			return pciDevice(sysfs, filepath.Join(append([]string{sysfs, "devices"}, parts[i+1:]...)...))
		}
	}
	return Device{}, fmt.Errorf("%s is not a sysfs PCI device path (want .../devices/pci.../<bus id>)", path)
}
