package multihost

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/gccl/gccl/internal/ucx"
)

var (
	enabled = flag.Bool("multihost", false, "run the multi-host suite (needs root; make multihost)")
	nets    = flag.String("multihost.net", "socket", "network providers to run over, comma-separated: the ranks' GCCL_NET")
	beds    = flag.String("multihost.beds", "2x1,2x3,3x2,4x1,4x2,4x3", "the beds of the matrix: HOSTSxRANKS, comma-separated")
)

// providers returns the -multihost.net list.
func providers() []string { return strings.Split(*nets, ",") }

// netEnv is the environment of a job's ranks over provider prov: GCCL_NET,
// and for ucx UCX_TLS=tcp unless the caller set UCX_TLS. The simulated
// hosts share one machine, where UCX would otherwise pick its shared
// memory transports between them, which no network namespace, cut link
// or netem delay reaches. A provider that cannot run here fails the test
// with the reason (libucp.so.0 missing: install libucx0), never skips: it
// was asked for.
func netEnv(t *testing.T, prov string) []string {
	t.Helper()
	e := []string{"GCCL_NET=" + prov}
	if prov != "ucx" {
		return e
	}
	if err := ucx.Load(); err != nil {
		t.Fatalf("-multihost.net=ucx: %v (make deps installs libucx0)", err)
	}
	if _, set := os.LookupEnv("UCX_TLS"); !set {
		e = append(e, "UCX_TLS=tcp")
	}
	return e
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}

// requireSuite skips a parent test unless -multihost was given.
func requireSuite(t *testing.T) {
	t.Helper()
	if !*enabled {
		t.Skip("the multi-host suite runs with -multihost (make multihost; needs root)")
	}
}
