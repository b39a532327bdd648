// Command killrank is the kill -9 fault harness: launched by mpirun (host
// backend), it runs a workload a few times to connect every transport, then
// starts it once more, and the victim rank kills itself with SIGKILL in the
// middle. Each survivor waits for the operation, checks that it failed with
// gccl.ErrRemote or gccl.ErrTimeout within twice the configured timeout,
// aborts its communicator (checking that Abort takes under a second), writes
// one result line to -out/rank-N and exits 0 on success, 1 otherwise.
//
// mpirun tears the job down when a rank dies, so survivors report through
// their files, and exit without MPI_Finalize (MPI's world lost a member).
// scripts/fault.sh runs it repeatedly under a hard timeout and checks the files.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/fault"
)

var (
	workload = flag.String("workload", "allreduce", "operation to cut: allreduce, sendrecv, group or p2p")
	timeout  = flag.Duration("timeout", 5*time.Second, "the communicator's deadline (Config.Timeout); MPI's waits get twice that")
	count    = flag.Int("count", 1<<20, "int32 elements per buffer")
	warmup   = flag.Int("warmup", 2, "verified-successful iterations before the fatal one")
	delay    = flag.Duration("delay", time.Millisecond, "how long after launching the victim kills itself")
	outDir   = flag.String("out", "", "directory for the per-rank result files (required)")
)

// victim is the rank that kills itself: $GCCL_FAULT_VICTIM, default 1.
func victim(size int) (int, error) {
	v := 1
	if s := os.Getenv("GCCL_FAULT_VICTIM"); s != "" {
		var err error
		if v, err = strconv.Atoi(s); err != nil {
			return 0, fmt.Errorf("GCCL_FAULT_VICTIM=%q: %v", s, err)
		}
	}
	if v < 0 || v >= size {
		return 0, fmt.Errorf("GCCL_FAULT_VICTIM=%d is not a rank of %d", v, size)
	}
	return v, nil
}

func main() {
	flag.Parse()
	if *outDir == "" {
		fmt.Fprintln(os.Stderr, "killrank: -out is required")
		os.Exit(2)
	}
	rank, line, err := run()
	if err != nil {
		line = "FAIL " + err.Error()
	} else {
		line = "OK " + line
	}
	fmt.Printf("rank %d: %s\n", rank, line)
	if werr := os.WriteFile(filepath.Join(*outDir, "rank-"+strconv.Itoa(rank)), []byte(line+"\n"), 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, "killrank:", werr)
		os.Exit(1)
	}
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0) // no MPI_Finalize: the world lost a rank
}

// run returns this rank and its result line.
func run() (int, string, error) {
	if err := mpiboot.Init(); err != nil {
		return -1, "", err
	}
	rank, size := mpiboot.World()
	// MPI's own waits (the barrier below) must not outlive a rank that
	// failed early either.
	if err := mpiboot.SetTimeout(2 * *timeout); err != nil {
		return rank, "", err
	}
	w, err := fault.WorkloadNamed(*workload)
	if err != nil {
		return rank, "", err
	}
	v, err := victim(size)
	if err != nil {
		return rank, "", err
	}
	c, err := mpiboot.NewComm(&comm.Config{Backend: device.Host, Timeout: *timeout, Name: "killrank"})
	if err != nil {
		return rank, "", fmt.Errorf("NewComm: %w", err)
	}
	b, err := fault.NewBufs(c, 4**count, 1)
	if err != nil {
		return rank, "", err
	}
	for i := range *warmup {
		if err := w.Launch(c, b, *count); err != nil {
			return rank, "", fmt.Errorf("warm-up %d launch: %w", i, err)
		}
		if err := b.Dev.Synchronize(b.S); err != nil {
			return rank, "", fmt.Errorf("warm-up %d: %w", i, err)
		}
	}
	if err := mpiboot.Barrier(); err != nil {
		return rank, "", err
	}
	start := time.Now()
	launchErr := w.Launch(c, b, *count)
	if launchErr != nil && (rank == v || !fault.PeerFailure(launchErr)) {
		return rank, "", fmt.Errorf("fatal launch: %w", launchErr)
	}
	if rank == v {
		time.Sleep(*delay)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // not reached
	}
	// A survivor slower than the victim may find the peer already gone at
	// launch: that ErrRemote is its answer, as a failed stream would be.
	line, err := survive(c, b, start, launchErr)
	return rank, line, err
}

// survive checks what a survivor sees (launchErr: the launch already failed
// because the victim was gone) and describes it; the error says
// what was wrong, if anything. The operation in flight must fail with
// ErrRemote or ErrTimeout, or (when this rank's share did not need the
// victim) succeed; either way AsyncError must report the loss within twice
// the timeout, and Abort must then take under a second.
func survive(c *comm.Comm, b *fault.Bufs, start time.Time, launchErr error) (string, error) {
	err := launchErr
	if err == nil {
		err = b.Dev.Synchronize(b.S)
	}
	synced := time.Since(start)
	var async error
	for {
		if async = c.AsyncError(); async != nil || time.Since(start) > 2**timeout {
			break
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	t0 := time.Now()
	abortErr := c.Abort()
	abortTook := time.Since(t0)
	line := fmt.Sprintf("class=%q async=%q after=%v/%v abort=%v/%v err=%v async=%v", gccl.Code(err), gccl.Code(async),
		synced.Round(time.Millisecond), took.Round(time.Millisecond), abortTook.Round(time.Microsecond), abortErr, err, async)
	switch {
	case err != nil && !fault.PeerFailure(err):
		return line, fmt.Errorf("wrong error: %s", line)
	case !fault.PeerFailure(async):
		return line, fmt.Errorf("AsyncError: %s", line)
	case took > 2**timeout:
		return line, fmt.Errorf("too slow: %s", line)
	case abortErr != nil || abortTook > time.Second:
		return line, fmt.Errorf("abort: %s", line)
	}
	return line, nil
}
