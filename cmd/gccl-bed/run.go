package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
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
	bf.gateway = bf.gateway || mpi
	b, err := bf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, stop := interrupted()
	defer stop()
	if mpi {
		return runMPI(ctx, b, *per, *timeout, *tcpOnly, strings.Fields(*mpirunArgs), argv)
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

// runMPI runs the job under mpirun, each rank entering its host through
// "gccl-bed exec -per".
func runMPI(ctx context.Context, b *testbed.Bed, per int, timeout time.Duration, tcpOnly bool, extra, argv []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	gw, ok := b.Gateway()
	if !ok {
		return fmt.Errorf("mpirun: the bed has no gateway, so the ranks cannot reach mpirun's PMIx server; build it with \"gccl-bed with -gateway\"")
	}
	subnet := gw.Masked().String()
	np := per * len(b.Hosts())
	args := []string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np), "--bind-to", "none",
		"--mca", "oob_tcp_if_include", subnet, "--mca", "mpi_yield_when_idle", "1", "-x", "PMIX_MCA_ptl_tcp_remote_connections", "-x", "PMIX_MCA_ptl_tcp_if_include"}
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan if this process is killed
	cmd.Env = append(os.Environ(), testbed.EnvDir+"="+b.Dir(),
		"PMIX_MCA_ptl_tcp_remote_connections=1", "PMIX_MCA_ptl_tcp_if_include="+subnet)
	fmt.Fprintf(os.Stderr, "gccl-bed: mpirun %s\n", strings.Join(args, " "))
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("mpirun still running after %v: killed (a hang)", timeout)
	}
	return passExit(err)
}
