package ucx

import (
	"os"

	"golang.org/x/sys/unix"
)

// pollable is a non-blocking, close-on-exec dup of fd as a file in Go's
// netpoller, so that a goroutine may sleep until fd is readable without
// blocking a thread. Closing it leaves fd open. (The flag is the open file
// description's, shared with fd: UCX never reads its event fd, an epoll
// set, so its being non-blocking changes nothing for UCX.)
func pollable(fd int) (*os.File, error) {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl", err)
	}
	if err := unix.SetNonblock(d, true); err != nil {
		unix.Close(d)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(d), "ucx-worker-events"), nil
}
