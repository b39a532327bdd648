package testbed

const sysSetns = 308 // setns(2) on linux/amd64; package syscall does not name it
