// Command killrank is the fault harness run under mpirun (host backend):
// one rank, the victim, fails in the middle of a workload and the others,
// the survivors, must each report it with a typed error in bounded time.
//
// With -fault kill it runs the workload a few times to connect every
// transport, then starts it once more, and the victim kills itself with
// SIGKILL in the middle. Each survivor waits for the operation and checks
// that it failed with gccl.ErrRemote or gccl.ErrTimeout (or, when its share
// did not need the victim, succeeded) within twice the configured timeout.
//
// With -fault stop (stop.go) the ranks run the workload over and over and
// the victim stops itself with SIGSTOP in the middle of the series, after
// writing its pid to -out/stopped: alive, its sockets open, it makes no
// progress. Each survivor checks that its operation failed with
// gccl.ErrTimeout within twice the timeout, naming the victim, and only
// it, as the rank that stalled. scripts/fault.sh then sends the stopped
// process SIGCONT (SIGKILL if it does not end), so that mpirun ends.
//
// Either way each survivor then checks that AsyncError agrees, aborts its
// communicator (checking that Abort takes under a second), writes one
// result line to -out/rank-N and exits 0 on success, 1 otherwise.
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
	mode     = flag.String("fault", "kill", "what the victim does: kill (SIGKILL itself) or stop (SIGSTOP itself)")
	workload = flag.String("workload", "allreduce", "operation to cut: allreduce, sendrecv, group or p2p")
	timeout  = flag.Duration("timeout", 5*time.Second, "the communicator's deadline (Config.Timeout); MPI's waits get twice that")
	count    = flag.Int("count", 1<<20, "int32 elements per buffer")
	warmup   = flag.Int("warmup", 2, "verified-successful iterations before the fatal one")
	delay    = flag.Duration("delay", time.Millisecond, "how long after launching the victim kills or stops itself")
	series   = flag.Int("series", 3, "-fault stop: the operation of the series during which the victim stops")
	outDir   = flag.String("out", "", "directory for the per-rank result files (required)")
)

// victim is the rank that fails: $GCCL_FAULT_VICTIM, default 1.
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
	if *mode != "kill" && *mode != "stop" {
		return rank, "", fmt.Errorf("-fault %q: want kill or stop", *mode)
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
	if *mode == "stop" {
		line, err := stop(c, b, w, rank, v)
		return rank, line, err
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
	err = launchErr
	if err == nil {
		err = b.Dev.Synchronize(b.S)
	}
	line, err := survive(c, start, err, peerFailed)
	return rank, line, err
}

// peerFailed judges a survivor's failure under -fault kill: the operation
// failed with gccl.ErrRemote or gccl.ErrTimeout, or (when this rank's share
// did not need the victim) succeeded, and AsyncError reports the loss.
func peerFailed(err, async error) string {
	switch {
	case err != nil && !fault.PeerFailure(err):
		return "wrong error"
	case !fault.PeerFailure(async):
		return "AsyncError"
	}
	return ""
}

// survive checks what a survivor sees, err being the result of the
// operation started at start, and describes it; the error says what was
// wrong, if anything. AsyncError must report the failure within twice the
// timeout, judge (which names what is wrong with err and async, or
// returns "") must accept both, and Abort must then take under a second.
func survive(c *comm.Comm, start time.Time, err error, judge func(err, async error) string) (string, error) {
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
	line := fmt.Sprintf("class=%q async=%q after=%v/%v blames=%q abort=%v/%v err=%v async=%v", gccl.Code(err), gccl.Code(async),
		synced.Round(time.Millisecond), took.Round(time.Millisecond), fault.Blamed(err),
		abortTook.Round(time.Microsecond), abortErr, err, async)
	if bad := judge(err, async); bad != "" {
		return line, fmt.Errorf("%s: %s", bad, line)
	}
	switch {
	case took > 2**timeout:
		return line, fmt.Errorf("too slow: %s", line)
	case abortErr != nil || abortTook > time.Second:
		return line, fmt.Errorf("abort: %s", line)
	}
	return line, nil
}
