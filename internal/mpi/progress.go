package mpi

import "github.com/gccl/gccl/internal/progress"

// installProgress installs the hook on gccl's progress seam (package
// internal/progress): while gccl waits, MPI_Iprobe on World's communicator,
// at most once per progress.Interval, so that MPI implementations that
// progress only inside MPI calls keep serving this process's peers (NCCL
// guide §4.2.1). Every probe goes through the executor, so below
// MPI_THREAD_MULTIPLE it runs on the funnel thread.
//
// background says whether the hook may also probe during gccl's background
// waits (the engine running a launch while the application goes on): only
// when no application thread can be calling MPI at the same time in a way
// the thread level forbids, that is when MPI is MPI_THREAD_MULTIPLE or Init
// started MPI itself (then every MPI call is this package's, funnelled).
// Otherwise it probes only while an application call waits inside gccl.
func installProgress(background bool) (remove func()) {
	return progress.Install(func(blocking bool) {
		if !blocking && !background {
			return
		}
		if !live.TryRLock() {
			return // Init or Finalize under way
		}
		defer live.RUnlock()
		rt.mu.Lock()
		e := rt.exec
		rt.mu.Unlock()
		if e != nil {
			_, _ = iprobe(e) // a failing probe shows again in the next MPI call
		}
	})
}
