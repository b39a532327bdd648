package testbed

import "syscall"

const sysSetns = syscall.SYS_SETNS
