package topo

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/gccl/gccl"
)

// maxAffinityCPU is the number of CPUs a thread's affinity mask can name
// here (unix.CPUSet, glibc's CPU_SETSIZE).
const maxAffinityCPU = 1024

// ThreadAffinity is the set of CPUs the calling OS thread may run on
// (sched_getaffinity): the process's affinity, as the launcher (mpirun
// --bind-to, taskset, a cgroup) set it, wherever the thread was not pinned.
func ThreadAffinity() (CPUSet, error) {
	var m unix.CPUSet
	if err := unix.SchedGetaffinity(0, &m); err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "affinity", "sched_getaffinity: %v", err)
	}
	var out CPUSet
	for c := range maxAffinityCPU {
		if m.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Pin locks the calling goroutine to its OS thread (runtime.LockOSThread)
// and restricts that thread to cpus (sched_setaffinity), for a long-lived
// goroutine: call it first and defer unpin, and run nothing of the
// goroutine's after unpin:
//
//	unpin, err := topo.Pin(cpus)
//	defer unpin()
//
// unpin gives the thread its mask back and unlocks it, so other
// goroutines never run with the narrowed mask; where the mask cannot be
// restored it leaves the thread locked, and the runtime ends the thread
// with the goroutine. An empty cpus does nothing; CPUs beyond 1023 are
// left out. On an error the goroutine runs unlocked, its thread's mask
// unchanged, and unpin does nothing.
func Pin(cpus CPUSet) (unpin func(), err error) {
	nothing := func() {}
	if len(cpus) == 0 {
		return nothing, nil
	}
	var want unix.CPUSet
	for _, c := range cpus {
		if c >= 0 && c < maxAffinityCPU {
			want.Set(c)
		}
	}
	if want.Count() == 0 {
		return nothing, gccl.Errorf(gccl.InvalidArgument, "cpus", "no CPU of %s is below %d", cpus, maxAffinityCPU)
	}
	runtime.LockOSThread()
	var had unix.CPUSet
	if err := unix.SchedGetaffinity(0, &had); err != nil {
		runtime.UnlockOSThread()
		return nothing, gccl.Errorf(gccl.SystemError, "affinity", "sched_getaffinity: %v", err)
	}
	if err := unix.SchedSetaffinity(0, &want); err != nil {
		runtime.UnlockOSThread()
		return nothing, gccl.Errorf(gccl.SystemError, "affinity", "sched_setaffinity(%s): %v", cpus, err)
	}
	return func() {
		if unix.SchedSetaffinity(0, &had) == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}
