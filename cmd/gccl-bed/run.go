package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gccl/gccl/internal/testbed"
)

// runCmd runs a job on the bed: per ranks a host, through the socket
// bootstrap (run) or under mpirun.
func runCmd(args []string, mpi bool) error {
	var bf bedFlags
	name := "run"
	if mpi {
		name = "mpirun"
	}
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	bf.add(fs)
	per := fs.Int("per", 1, "ranks per host")
	timeout := fs.Duration("timeout", 10*time.Minute, "the job's deadline: ranks still running then are killed and the run fails")
	tcpOnly := fs.Bool("mca-tcp", true, "mpirun: make Open MPI use TCP between every pair of ranks, over the bed's subnet")
	mpirunArgs := fs.String("mpirun-args", "", "mpirun: more arguments for mpirun, space-separated")
	argv := parse(fs, args, true)
	b, err := bf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, stop := interrupted()
	defer stop()
	if mpi {
		return runMPI(ctx, b, subnetOf(b), *per, *timeout, *tcpOnly, strings.Fields(*mpirunArgs), argv)
	}
	job, err := b.Launch(*per, argv, nil, os.Stdout)
	if err != nil {
		return err
	}
	done := make(chan []error, 1)
	go func() { done <- job.Wait(*timeout) }()
	var errs []error
	select {
	case errs = <-done:
	case <-ctx.Done():
		job.Kill()
		errs = <-done
		return fmt.Errorf("interrupted: %w", testbed.Failed(errs))
	}
	if err := testbed.Failed(errs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gccl-bed: %d ranks on %d hosts passed\n", len(errs), len(b.Hosts()))
	return nil
}

// subnetOf returns the subnet of the bed's addresses, for Open MPI's
// interface selection.
func subnetOf(b *testbed.Bed) string {
	hs := b.Hosts()
	a := hs[0].Addr.As4()
	return fmt.Sprintf("%d.%d.%d.0/24", a[0], a[1], a[2])
}

// runMPI runs the job under mpirun, each rank entering its host through
// "gccl-bed exec -per".
func runMPI(ctx context.Context, b *testbed.Bed, subnet string, per int, timeout time.Duration, tcpOnly bool, extra, argv []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	np := per * len(b.Hosts())
	args := []string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np), "--bind-to", "none"}
	if tcpOnly {
		args = append(args, "--mca", "btl", "tcp,self", "--mca", "pml", "ob1",
			"--mca", "btl_tcp_if_include", subnet)
	}
	args = append(args, extra...)
	args = append(append(args, self, "exec", "-per", strconv.Itoa(per), "--"), argv...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mpirun", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), testbed.EnvDir+"="+b.Dir())
	fmt.Fprintf(os.Stderr, "gccl-bed: mpirun %s\n", strings.Join(args, " "))
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("mpirun still running after %v: killed (a hang)", timeout)
	}
	return passExit(err)
}
