package testbed

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNoNamespaces means the kernel refused new namespaces: run as root
// (or with CAP_SYS_ADMIN).
var ErrNoNamespaces = errors.New("testbed: cannot create namespaces")

// Config describes a bed. The zero value of every field but Hosts is a
// default.
type Config struct {
	Hosts    int           // simulated hosts, at least 1
	Subnet   netip.Prefix  // their addresses: host i gets the (i+1)-th; default 10.77.0.0/24
	Name     string        // host i's name is Name+i; default "bed"
	Rate     int64         // bits per second of each link, each way (tc); 0: unshaped
	Delay    time.Duration // each link's one-way delay (tc netem)
	Links    map[int]Link  // host i's link, where it differs from Rate and Delay
	StateDir string        // where beds record themselves; default /run/gccl-testbed
	// Gateway also plugs the machine's own network namespace into the
	// bridge, with the subnet's last address (.254 of a /24), through a
	// veth pair called gcclbed<pid>: what mpirun needs, its PMIx server
	// staying in this namespace while the ranks run in the hosts.
	Gateway bool
}

// DefaultSubnet is the hosts' subnet unless Config.Subnet says otherwise.
var DefaultSubnet = netip.MustParsePrefix("10.77.0.0/24")

// DefaultStateDir is where beds record their processes unless
// Config.StateDir says otherwise.
const DefaultStateDir = "/run/gccl-testbed"

// Host is one simulated host.
type Host struct {
	Index int
	Name  string     // its host name (UTS namespace)
	Addr  netip.Addr // the address of its eth0
	Pid   int        // its holder process: /proc/Pid/ns/{net,uts}
	h     *holder
}

// Bed is a set of simulated hosts on one switch.
type Bed struct {
	cfg   Config
	dir   string
	sw    *holder
	hosts []*Host
	gw    netip.Prefix // the gateway's address, if any
	gwDev string       // its interface in this namespace

	mu       sync.Mutex
	started  []*exec.Cmd // processes started in hosts, killed at Close
	closed   bool
	attached bool // Attach's: the bed is another process's
}

// New builds a bed: a switch namespace holding bridge br0, and cfg.Hosts
// hosts, each a network and UTS namespace of its own named cfg.Name+i,
// whose eth0 (address cfg.Subnet's i+1-th, loopback up) is a veth pair
// with port h<i> of br0. It first removes what crashed beds left behind.
// A bed that cannot be built is torn down and the error says why.
func New(cfg Config) (b *Bed, err error) {
	if cfg.Hosts < 1 || cfg.Hosts > 250 {
		return nil, fmt.Errorf("testbed: %d hosts: want 1 to 250", cfg.Hosts)
	}
	auto := !cfg.Subnet.IsValid()
	if auto {
		cfg.Subnet = DefaultSubnet
	}
	if !cfg.Subnet.Addr().Is4() || cfg.Subnet.Bits() > 24 {
		return nil, fmt.Errorf("testbed: subnet %v: want IPv4, /24 or wider", cfg.Subnet)
	}
	if cfg.Name == "" {
		cfg.Name = "bed"
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if cfg.shaped() && !haveTC() {
		return nil, ErrNoTC
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: not root (uid %d); run as root", ErrNoNamespaces, os.Geteuid())
	}
	if err := CleanStale(cfg.StateDir); err != nil {
		return nil, err
	}
	if cfg.Gateway {
		unlock, err := lockGateways(cfg.StateDir)
		if err != nil {
			return nil, err
		}
		defer unlock() // once the gateway has its address
		if cfg.Subnet, err = gatewaySubnet(cfg, auto); err != nil {
			return nil, err
		}
	}
	b = &Bed{cfg: cfg}
	built := b // "return nil, err" sets b to nil before this runs
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	if err := b.record(); err != nil {
		return nil, err
	}
	if b.sw, err = startHolder(cfg.Name + "-switch"); err != nil {
		return nil, err
	}
	if err := b.writeState(); err != nil {
		return nil, err
	}
	sw, err := b.rtnlIn(b.sw)
	if err != nil {
		return nil, err
	}
	defer sw.Close()
	if err := sw.addBridge("br0"); err != nil {
		return nil, err
	}
	if err := sw.up("br0", ""); err != nil {
		return nil, err
	}
	base := cfg.Subnet.Masked().Addr().As4()
	for i := range cfg.Hosts {
		addr := base
		addr[2] += byte((i + 1) / 256)
		addr[3] += byte((i + 1) % 256)
		if err := b.addHost(sw, i, netip.AddrFrom4(addr)); err != nil {
			return nil, err
		}
		if err := b.writeState(); err != nil {
			return nil, err
		}
	}
	if err := b.shape(); err != nil {
		return nil, err
	}
	if cfg.Gateway {
		if err := b.addGateway(sw); err != nil {
			return nil, err
		}
		if err := b.writeState(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// addGateway plugs this namespace into the bridge (Config.Gateway).
func (b *Bed) addGateway(sw *rtnl) error {
	last := b.cfg.Subnet.Masked().Addr().As4()
	host := 32 - b.cfg.Subnet.Bits()
	for i := range 4 {
		if bits := host - 8*(3-i); bits > 0 {
			last[i] |= byte(1<<min(bits, 8) - 1)
		}
	}
	last[3]-- // not the broadcast address
	dev := fmt.Sprintf("gcclbed%d", b.sw.pid)
	root, err := openRTNL() // in this thread's namespace: the machine's own
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.addVeth(dev, "gw", b.sw.ns.net); err != nil {
		return err
	}
	b.gwDev = dev
	if err := sw.up("gw", "br0"); err != nil {
		return err
	}
	b.gw = netip.PrefixFrom(netip.AddrFrom4(last), b.cfg.Subnet.Bits())
	if err := root.addAddr(dev, b.gw); err != nil {
		return err
	}
	return root.up(dev, "")
}

// Gateway returns the address of this namespace on the bed's subnet, if
// the bed has a gateway (Config.Gateway).
func (b *Bed) Gateway() (netip.Prefix, bool) { return b.gw, b.gw.IsValid() }

// addHost starts host i and wires it to the switch.
func (b *Bed) addHost(sw *rtnl, i int, addr netip.Addr) error {
	h := &Host{Index: i, Name: b.cfg.Name + strconv.Itoa(i), Addr: addr}
	hd, err := startHolder(h.Name)
	if err != nil {
		return err
	}
	h.h, h.Pid = hd, hd.pid
	b.hosts = append(b.hosts, h)
	port := "h" + strconv.Itoa(i)
	if err := sw.addVeth(port, "eth0", hd.ns.net); err != nil {
		return err
	}
	if err := sw.up(port, "br0"); err != nil {
		return err
	}
	nl, err := b.rtnlIn(hd)
	if err != nil {
		return err
	}
	defer nl.Close()
	if err := nl.addAddr("eth0", netip.PrefixFrom(addr, b.cfg.Subnet.Bits())); err != nil {
		return err
	}
	return nl.up("eth0", "")
}

// rtnlIn opens a route netlink socket in the holder's network namespace.
func (b *Bed) rtnlIn(h *holder) (*rtnl, error) {
	var nl *rtnl
	err := inNS(h.ns, func() (err error) {
		nl, err = openRTNL()
		return err
	})
	return nl, err
}

// Hosts returns the bed's hosts.
func (b *Bed) Hosts() []*Host { return b.hosts }

// Host runs fn on an OS thread inside host i's namespaces (sockets it opens
// belong to the host's network).
func (b *Bed) Host(i int, fn func() error) error {
	if i < 0 || i >= len(b.hosts) {
		return fmt.Errorf("testbed: host %d: the bed has %d", i, len(b.hosts))
	}
	return inNS(b.hosts[i].h.ns, fn)
}

// Dir returns the bed's state directory (Attach reads it).
func (b *Bed) Dir() string { return b.dir }

// Start starts cmd inside host i (its network and UTS namespaces); Close
// kills it if it still runs. Unless cmd sets SysProcAttr, the process is
// killed when this one dies.
func (b *Bed) Start(i int, cmd *exec.Cmd) error {
	if i < 0 || i >= len(b.hosts) {
		return fmt.Errorf("testbed: host %d: the bed has %d", i, len(b.hosts))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("testbed: the bed is closed")
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	if err := inNS(b.hosts[i].h.ns, cmd.Start); err != nil {
		return fmt.Errorf("starting %s in host %s: %w", cmd.Path, b.hosts[i].Name, err)
	}
	b.started = append(b.started, cmd)
	return nil
}

// Close tears the bed down: every process in its namespaces (those Start
// started and any they started) is killed, the holders end (which deletes
// the namespaces, the veth pairs and the bridge with them), and its state
// directory is removed. Close is safe on nil and twice.
func (b *Bed) Close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	started := b.started
	b.mu.Unlock()
	if b.attached {
		for _, c := range started {
			_ = c.Process.Kill()
		}
		for _, h := range b.hosts {
			h.h.stop()
		}
		return nil
	}
	var nss []nsPair
	for _, h := range b.holders() {
		nss = append(nss, h.nsPair)
	}
	for _, c := range started {
		_ = c.Process.Kill()
	}
	// Grandchildren too: a shell's commands, ranks mpirun started.
	// (The holders die with them; stop then reaps them.)
	waitGone(killInNS(nss), 5*time.Second)
	if b.gwDev != "" { // it would go with the switch's namespace, but not at once
		if root, err := openRTNL(); err == nil {
			_ = root.delLink(b.gwDev)
			root.Close()
		}
	}
	for _, h := range b.holders() {
		h.stop()
	}
	var err error
	if b.dir != "" {
		err = os.RemoveAll(b.dir)
	}
	return err
}

func (b *Bed) holders() []*holder {
	hs := []*holder{b.sw}
	for _, h := range b.hosts {
		hs = append(hs, h.h)
	}
	var out []*holder
	for _, h := range hs {
		if h != nil && h.cmd != nil {
			out = append(out, h)
		}
	}
	return out
}

// record makes the bed's state directory and writes its owner.
func (b *Bed) record() error {
	if err := os.MkdirAll(b.cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("testbed: state directory: %w", err)
	}
	dir, err := os.MkdirTemp(b.cfg.StateDir, "bed-")
	if err != nil {
		return fmt.Errorf("testbed: state directory: %w", err)
	}
	b.dir = dir
	self := os.Getpid()
	return os.WriteFile(filepath.Join(dir, "owner"), fmt.Appendf(nil, "%d %d\n", self, procStart(self)), 0o644)
}

// waitGone waits up to d for every pid to exit (a zombie has).
func waitGone(pids []int, d time.Duration) {
	end := time.Now().Add(d)
	for _, p := range pids {
		for running(p) && time.Now().Before(end) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}
