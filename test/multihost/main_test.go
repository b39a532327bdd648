package multihost

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var (
	enabled = flag.Bool("multihost", false, "run the multi-host suite (needs root; make multihost)")
	nets    = flag.String("multihost.net", "socket", "network providers to run over, comma-separated: the ranks' GCCL_NET")
	beds    = flag.String("multihost.beds", "2x1,2x3,3x2,4x1,4x2,4x3", "the beds of the matrix: HOSTSxRANKS, comma-separated")
)

// providers returns the -multihost.net list.
func providers() []string { return strings.Split(*nets, ",") }

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
