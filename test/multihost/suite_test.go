package multihost

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/testbed"
	"github.com/gccl/gccl/test/fault"
	"github.com/stretchr/testify/require"
)

// jobLimit bounds one job: a rank still running then is a hang.
const jobLimit = 3 * time.Minute

// bedShape is one -multihost.beds entry.
type bedShape struct{ hosts, per int }

func (b bedShape) String() string { return fmt.Sprintf("%dhosts×%d", b.hosts, b.per) }

func parseBeds(t *testing.T) []bedShape {
	var out []bedShape
	for _, s := range strings.Split(*beds, ",") {
		h, p, ok := strings.Cut(strings.TrimSpace(s), "x")
		hn, err1 := strconv.Atoi(h)
		pn, err2 := strconv.Atoi(p)
		if !ok || err1 != nil || err2 != nil || hn < 1 || pn < 1 {
			t.Fatalf("-multihost.beds: %q is not HOSTSxRANKS", s)
		}
		out = append(out, bedShape{hn, pn})
	}
	return out
}

// runJob builds a bed of shape, runs per ranks of TestRank in each host
// with env, and returns each rank's result and the ranks' output.
func runJob(t *testing.T, shape bedShape, env ...string) ([]error, string) {
	t.Helper()
	b, err := testbed.New(testbed.Config{Hosts: shape.hosts})
	require.NoError(t, err, "building the bed (the suite needs root: network and UTS namespaces)")
	defer func() { require.NoError(t, b.Close()) }()
	exe, err := os.Executable()
	require.NoError(t, err)
	var out bytes.Buffer
	argv := []string{exe, "-test.run=^TestRank$", "-test.count=1", "-test.v", "-test.timeout=" + jobLimit.String()}
	job, err := b.Launch(shape.per, argv, env, &out)
	require.NoError(t, err)
	errs := job.Wait(jobLimit)
	return errs, out.String()
}

// TestMatrix runs every collective × type class × placement × count, the
// point-to-point patterns and a group on each bed of -multihost.beds, over
// each provider of -multihost.net.
func TestMatrix(t *testing.T) {
	requireSuite(t)
	for _, prov := range providers() {
		for _, shape := range parseBeds(t) {
			t.Run(prov+"/"+shape.String(), func(t *testing.T) {
				start := time.Now()
				errs, out := runJob(t, shape, append(netEnv(t, prov), roleEnv+"=matrix")...)
				if err := testbed.Failed(errs); err != nil {
					t.Errorf("%v\n%s", err, out)
				}
				t.Logf("%d ranks in %v", len(errs), time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// TestKillRank kills a rank (kill -9) of host 1 in the middle of each
// test/fault workload, on 3 hosts × 2 ranks: every survivor, on every
// host, must report a typed error naming it within twice the deadline.
func TestKillRank(t *testing.T) {
	requireSuite(t)
	shape := bedShape{hosts: 3, per: 2}
	for _, prov := range providers() {
		for i, w := range fault.Workloads {
			victim := shape.per + i%shape.per // a rank of host 1
			t.Run(fmt.Sprintf("%s/%s/victim%d", prov, w.Name, victim), func(t *testing.T) {
				errs, out := runJob(t, shape, append(netEnv(t, prov), roleEnv+"=kill", workloadEnv+"="+w.Name,
					victimEnv+"="+strconv.Itoa(victim))...)
				for r, err := range errs {
					if r == victim {
						if !killed(err) {
							t.Errorf("victim %d: %v, want killed by SIGKILL", r, err)
						}
					} else if err != nil {
						t.Errorf("survivor %v", err)
					}
				}
				if t.Failed() {
					t.Log("\n" + out)
				} else {
					t.Log("\n" + grepLines(out, "kill_test.go"))
				}
			})
		}
	}
}

// killed reports whether a rank's result is death by SIGKILL.
func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
