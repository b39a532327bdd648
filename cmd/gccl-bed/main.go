// Command gccl-bed runs gccl's ranks on simulated hosts of one machine
// (internal/testbed: network and UTS namespaces on a bridge). It needs root.
//
//	gccl-bed run    [bed flags] -per R [-timeout D] -- PROG ARGS...
//	gccl-bed mpirun [bed flags] -per R [-timeout D] [-mca-tcp=false] -- PROG ARGS...
//	gccl-bed stream [bed flags] [-bytes N] [-from I -to J]
//	gccl-bed with   [bed flags] -- COMMAND ARGS...
//	gccl-bed exec   [-host I | -per R] -- COMMAND ARGS...
//
// run starts R ranks of PROG in each host, found by gccl's socket bootstrap
// (no MPI): the ranks read their place from GCCL_BED_RANK, GCCL_BED_NRANKS,
// GCCL_BED_HOST, GCCL_BED_LOCAL and GCCL_BED_ID_FILE (testbed.PlaceFromEnv,
// then Place.Join), rank 0 writing the unique ID to that file. GCCL_NET and
// every other variable reach the ranks unchanged.
//
// mpirun runs "mpirun -np hosts·R" from the machine's own namespace, each
// rank through "gccl-bed exec -per R", which enters host
// OMPI_COMM_WORLD_RANK/R. Open MPI is told to use TCP between every pair of
// ranks over the bed's links (--mca btl tcp,self --mca pml ob1,
// btl_tcp_if_include the bed's subnet). Its PMIx server stays in the
// machine's namespace, which the bed's gateway (-gateway, the subnet's .254)
// plugs into the bridge; PMIx is told to listen there
// (PMIX_MCA_ptl_tcp_remote_connections=1, ptl_tcp_if_include the subnet),
// since a rank's namespace cannot reach the machine's loopback.
//
// stream measures the links: one TCP stream of -bytes from host -from to
// host -to, and prints the rate.
//
// with builds a bed and runs COMMAND in the machine's own namespace with
// GCCL_BED set to the bed's state directory; run, mpirun and stream inside
// it use that bed instead of building one, so that a script measures
// several things on the same links. exec, only inside a bed, replaces
// itself with COMMAND run in host I.
//
// Bed flags: -hosts N, -rate BITS/s (tc tbf; 0 = unshaped), -delay D (tc
// netem), -link I=RATE[/DELAY] (one host's link), -subnet, -state DIR,
// -gateway. The bed is torn down on exit, on failure and
// on SIGINT/SIGTERM; one a crashed run left is removed first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gccl/gccl/internal/testbed"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch sub, args := os.Args[1], os.Args[2:]; sub {
	case "run":
		err = runCmd(args, false)
	case "mpirun":
		err = runCmd(args, true)
	case "stream":
		err = streamCmd(args)
	case "with":
		err = withCmd(args)
	case "exec":
		err = execCmd(args)
	default:
		usage()
	}
	var exit exitCode
	switch {
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case err != nil:
		fmt.Fprintln(os.Stderr, "gccl-bed:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gccl-bed run|mpirun|stream|with|exec [flags] [-- command...]  (go doc ./cmd/gccl-bed)")
	os.Exit(2)
}

// exitCode is a command's exit status, passed on.
type exitCode int

func (e exitCode) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// bedFlags are the flags that describe a bed.
type bedFlags struct {
	hosts   int
	rate    float64
	delay   time.Duration
	subnet  string
	state   string
	gateway bool
	links   map[int]testbed.Link
}

func (f *bedFlags) add(fs *flag.FlagSet) {
	fs.IntVar(&f.hosts, "hosts", 2, "simulated hosts")
	fs.Float64Var(&f.rate, "rate", 0, "each link's rate in bits/s, each way (tc tbf); 0: unshaped")
	fs.DurationVar(&f.delay, "delay", 0, "each link's one-way delay (tc netem)")
	fs.StringVar(&f.subnet, "subnet", "", "the hosts' IPv4 subnet (default 10.77.0.0/24; with -gateway the first free 10.77.k.0/24)")
	fs.StringVar(&f.state, "state", testbed.DefaultStateDir, "where beds record their processes")
	fs.Func("link", "host I's link where it differs from -rate and -delay: I=RATE or I=RATE/DELAY (repeatable; RATE 0: unshaped)", f.addLink)
	fs.BoolVar(&f.gateway, "gateway", false, "plug this namespace into the bed's bridge (the subnet's .254): mpirun needs it, and sets it on a bed it builds")
}

// addLink parses one -link value.
func (f *bedFlags) addLink(v string) error {
	host, spec, ok := strings.Cut(v, "=")
	i, err := strconv.Atoi(host)
	if !ok || err != nil || i < 0 {
		return fmt.Errorf("want I=RATE or I=RATE/DELAY, got %q", v)
	}
	rate, delay, _ := strings.Cut(spec, "/")
	var l testbed.Link
	r, err := strconv.ParseFloat(rate, 64)
	if err != nil {
		return fmt.Errorf("rate %q: %v", rate, err)
	}
	l.Rate = int64(r)
	if delay != "" {
		if l.Delay, err = time.ParseDuration(delay); err != nil {
			return err
		}
	}
	if f.links == nil {
		f.links = map[int]testbed.Link{}
	}
	f.links[i] = l
	return nil
}

// open returns the bed of $GCCL_BED (inside "gccl-bed with"), else a new
// one; close tears down only a bed it built.
func (f *bedFlags) open() (*testbed.Bed, error) {
	if dir := os.Getenv(testbed.EnvDir); dir != "" {
		return testbed.Attach(dir)
	}
	var sub netip.Prefix
	if f.subnet != "" {
		var err error
		if sub, err = netip.ParsePrefix(f.subnet); err != nil {
			return nil, fmt.Errorf("-subnet: %v", err)
		}
	}
	return testbed.New(testbed.Config{Hosts: f.hosts, Subnet: sub, Rate: int64(f.rate), Delay: f.delay, StateDir: f.state, Gateway: f.gateway, Links: f.links})
}

// parse parses args up to "--" and returns what follows it.
func parse(fs *flag.FlagSet, args []string, needCmd bool) []string {
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: gccl-bed %s [flags] -- command...\n", fs.Name())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	rest := fs.Args()
	if needCmd && len(rest) == 0 {
		fs.Usage()
		os.Exit(2)
	}
	return rest
}

// interrupted returns a context ended by SIGINT or SIGTERM.
func interrupted() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// withCmd builds a bed and runs a command in this namespace, GCCL_BED set.
func withCmd(args []string) error {
	var bf bedFlags
	fs := flag.NewFlagSet("with", flag.ExitOnError)
	bf.add(fs)
	argv := parse(fs, args, true)
	os.Unsetenv(testbed.EnvDir) // a new bed, even inside another
	b, err := bf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	for _, h := range b.Hosts() {
		fmt.Fprintf(os.Stderr, "gccl-bed: host %s %v\n", h.Name, h.Addr)
	}
	ctx, stop := interrupted()
	defer stop()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), testbed.EnvDir+"="+b.Dir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan if this process is killed
	return passExit(cmd.Run())
}

// passExit turns a command's exit status into this program's.
func passExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return exitCode(ee.ExitCode())
	}
	return err
}

// execCmd enters a host of $GCCL_BED and execs the command there.
func execCmd(args []string) error {
	fs := flag.NewFlagSet("exec", flag.ExitOnError)
	host := fs.Int("host", -1, "the host to enter")
	per := fs.Int("per", 0, "ranks per host: enter host $OMPI_COMM_WORLD_RANK (or $PMI_RANK) / per")
	argv := parse(fs, args, true)
	dir := os.Getenv(testbed.EnvDir)
	if dir == "" {
		return errors.New("exec: GCCL_BED is not set: run inside \"gccl-bed with\" or \"gccl-bed mpirun\"")
	}
	if *per > 0 {
		s := os.Getenv("OMPI_COMM_WORLD_RANK")
		if s == "" {
			s = os.Getenv("PMI_RANK")
		}
		r, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("exec -per: no MPI rank in OMPI_COMM_WORLD_RANK or PMI_RANK (%q)", s)
		}
		*host = r / *per
	}
	b, err := testbed.Attach(dir)
	if err != nil {
		return err
	}
	hosts := b.Hosts()
	if *host < 0 || *host >= len(hosts) {
		return fmt.Errorf("exec: host %d: the bed has %d (give -host or -per)", *host, len(hosts))
	}
	return testbed.Exec(hosts[*host], argv, os.Environ())
}
