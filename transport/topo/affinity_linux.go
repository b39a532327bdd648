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
// and restricts that thread to cpus (sched_setaffinity). It is for the
// start of a long-lived goroutine: the goroutine must never unlock the
// thread, so that when it returns the runtime ends the thread instead of
// handing its narrowed mask to other goroutines. An empty cpus does
// nothing (the goroutine stays unlocked). CPUs beyond 1023 are left out.
// On an error the goroutine stays locked, with the thread's mask
// unchanged.
func Pin(cpus CPUSet) error {
	if len(cpus) == 0 {
		return nil
	}
	runtime.LockOSThread()
	var m unix.CPUSet
	for _, c := range cpus {
		if c >= 0 && c < maxAffinityCPU {
			m.Set(c)
		}
	}
	if m.Count() == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "cpus", "no CPU of %s is below %d", cpus, maxAffinityCPU)
	}
	if err := unix.SchedSetaffinity(0, &m); err != nil {
		return gccl.Errorf(gccl.SystemError, "affinity", "sched_setaffinity(%s): %v", cpus, err)
	}
	return nil
}
