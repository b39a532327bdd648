package transport

import (
	"fmt"

	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/topo"
)

// placement is where an endpoint runs: the provider's device it listens
// on, and the CPUs its connections' progress goroutines are pinned to
// (nil: their affinity is left alone), each with the reason, for the log.
type placement struct {
	dev     int
	why     string
	cpus    topo.CPUSet
	cpusWhy string
}

// place chooses among devs[cands] (cands in the provider's order, never
// empty) as NCCL's topology search does: for a GPU rank the device
// nearest the GPU on the PCI tree (topo.Nearest), for a host rank the
// first on a NUMA node that the CPUs the process may run on (allowed)
// belong to; ties, and devices with no PCI path, keep the provider's
// order, and an explicit choice (GCCL_SOCKET_IFNAME) wins. The CPUs are
// those near the GPU, else near the chosen device, within allowed unless
// GCCL_IGNORE_CPU_AFFINITY; none when that leaves nothing.
func (cfg Config) place(devs []network.Properties, cands []int, explicit string, allowed topo.CPUSet) placement {
	located := make([]topo.Device, len(cands)) // zero (no Path) where sysfs does not place the device
	for i, c := range cands {
		if devs[c].PCIPath == "" {
			continue
		}
		d, err := topo.DeviceAt(cfg.Sysfs, devs[c].PCIPath)
		if err != nil {
			env.Logger("NET").Debug("network device not in the PCI topology", "device", devs[c].Name, "pci_path", devs[c].PCIPath, "err", err)
			continue
		}
		located[i] = d
	}
	gpu, gpuErr := cfg.gpu()
	i, why := 0, "first in the provider's order"
	switch {
	case explicit != "":
		why = explicit + " selects it"
	case cfg.GPUBusID != "" && gpuErr != nil:
		why += fmt.Sprintf(": GPU %s is not in the PCI topology (%v)", cfg.GPUBusID, gpuErr)
	case cfg.GPUBusID != "":
		if n := topo.Nearest(gpu, located); n >= 0 {
			hops, cross := topo.Hops(gpu, located[n])
			i, why = n, fmt.Sprintf("nearest to GPU %s, %d PCI hops", gpu.BusID, hops)
			if cross {
				why += " through the CPU"
			}
		} else {
			why += ": no device has a PCI path"
		}
	default:
		if n, node := onProcessNode(cfg.Sysfs, located, allowed); n >= 0 {
			i, why = n, fmt.Sprintf("on NUMA node %d, where this process runs", node)
		}
	}
	p := placement{dev: cands[i], why: why}
	anchor, what := located[i], "device "+devs[cands[i]].Name
	if gpuErr == nil {
		anchor, what = gpu, "GPU "+gpu.BusID
	}
	p.cpus, p.cpusWhy = cfg.cpus(anchor, what, allowed)
	return p
}

// gpu is the rank's GPU in the PCI topology; an error for a host rank.
func (cfg Config) gpu() (topo.Device, error) {
	if cfg.GPUBusID == "" {
		return topo.Device{}, fmt.Errorf("a host rank has no GPU")
	}
	s, err := topo.Detect(cfg.Sysfs, []string{cfg.GPUBusID})
	if err != nil {
		return topo.Device{}, err
	}
	return s.GPUs[0], nil
}

// onProcessNode is the first located device on a NUMA node that some CPU
// of allowed belongs to, and that node; -1 when none is.
func onProcessNode(sysfs string, located []topo.Device, allowed topo.CPUSet) (int, int) {
	nodes, err := topo.Nodes(sysfs)
	if err != nil {
		env.Logger("NET").Debug("NUMA nodes unknown", "err", err)
	}
	for i, d := range located {
		if len(d.Path) > 0 && d.NUMA >= 0 && len(nodes[d.NUMA].Intersect(allowed)) > 0 {
			return i, d.NUMA
		}
	}
	return -1, -1
}

// cpus is where the progress goroutines go: the CPUs near anchor (what
// names it), within allowed unless cfg.IgnoreCPUAffinity; nil, and why,
// when there are none.
func (cfg Config) cpus(anchor topo.Device, what string, allowed topo.CPUSet) (topo.CPUSet, string) {
	if len(anchor.Path) == 0 {
		return nil, "no PCI device to place them near: affinity left alone"
	}
	local, err := topo.LocalCPUs(cfg.Sysfs, anchor)
	if err != nil || len(local) == 0 {
		env.Logger("NET").Debug("CPUs near the device unknown", "device", what, "err", err)
		return nil, fmt.Sprintf("CPUs near %s unknown: affinity left alone", what)
	}
	if cfg.IgnoreCPUAffinity {
		return local, fmt.Sprintf("near %s (GCCL_IGNORE_CPU_AFFINITY: the process's affinity %s ignored)", what, allowed)
	}
	both := local.Intersect(allowed)
	if len(both) == 0 {
		return nil, fmt.Sprintf("CPUs near %s (%s) are outside this process's affinity (%s): affinity left alone", what, local, allowed)
	}
	return both, fmt.Sprintf("near %s, within this process's affinity", what)
}
