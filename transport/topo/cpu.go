package topo

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gccl/gccl"
)

// MaxCPU bounds the CPU numbers ParseCPUList accepts: a list naming a
// larger one is garbage, not a machine.
const MaxCPU = 1 << 16

// CPUSet is a set of CPU numbers, ascending and without repeats; nil is
// the empty set.
type CPUSet []int

// ParseCPUList parses the kernel's CPU list format ("0-3,8-11", "5", ""
// for none; a trailing newline is allowed), as sysfs's cpulist and
// local_cpulist files hold it. Anything else is a gccl.ErrInvalidArgument
// naming the bad part.
func ParseCPUList(s string) (CPUSet, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out CPUSet
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		b := a
		if err == nil && isRange {
			b, err = cpuNumber(hi)
		}
		if err != nil || b < a {
			return nil, gccl.Errorf(gccl.InvalidArgument, "cpulist", "%q is not a CPU list (want ranges like 0-3,8-11): bad part %q", s, part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// cpuNumber parses one CPU number, 0..MaxCPU-1.
func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= MaxCPU || s != strconv.Itoa(n) {
		return 0, gccl.Errorf(gccl.InvalidArgument, "cpulist", "bad CPU number %q", s)
	}
	return n, nil
}

// String is the set in the kernel's CPU list format, "0-3,8-11" ("" when
// empty).
func (s CPUSet) String() string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Intersect is the CPUs in both s and o.
func (s CPUSet) Intersect(o CPUSet) CPUSet {
	var out CPUSet
	for i, j := 0, 0; i < len(s) && j < len(o); {
		switch {
		case s[i] < o[j]:
			i++
		case s[i] > o[j]:
			j++
		default:
			out = append(out, s[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// readCPUList reads and parses a cpulist file.
func readCPUList(path string) (CPUSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "sysfs", "reading %s: %v", path, err)
	}
	s, err := ParseCPUList(string(b))
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "sysfs", "%s: %w", path, err)
	}
	return s, nil
}

// NodeCPUs is NUMA node node's CPUs, from
// <sysfs>/devices/system/node/node<N>/cpulist.
func NodeCPUs(sysfs string, node int) (CPUSet, error) {
	if node < 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "node", "NUMA node %d: the kernel does not know the device's node", node)
	}
	return readCPUList(filepath.Join(sysfs, "devices", "system", "node", "node"+strconv.Itoa(node), "cpulist"))
}

// Nodes maps every NUMA node sysfs lists to its CPUs; nil (and no error)
// where the kernel lists none (no NUMA support).
func Nodes(sysfs string) (map[int]CPUSet, error) {
	dir := filepath.Join(sysfs, "devices", "system", "node")
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "sysfs", "listing %s: %v", dir, err)
	}
	out := map[int]CPUSet{}
	for _, e := range ents {
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node"))
		if !strings.HasPrefix(e.Name(), "node") || err != nil || n < 0 {
			continue // has_cpu, online, possible, ...
		}
		if out[n], err = NodeCPUs(sysfs, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LocalCPUs is the CPUs near PCI device d: its local_cpulist, else its
// NUMA node's CPUs.
func LocalCPUs(sysfs string, d Device) (CPUSet, error) {
	if len(d.Path) > 0 {
		dir := filepath.Join(append([]string{sysfs, "devices"}, d.Path...)...)
		if s, err := readCPUList(filepath.Join(dir, "local_cpulist")); err == nil && len(s) > 0 {
			return s, nil
		}
	}
	return NodeCPUs(sysfs, d.NUMA)
}
