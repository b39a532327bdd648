// Package fdpass hands a file descriptor to peer processes of the same
// host. A cuMem allocation is shared as a POSIX file descriptor, which
// means something only in the process that holds it; as NCCL does, gccl
// passes the descriptor to a peer process over a Unix domain socket
// (SCM_RIGHTS). The exporting rank serves it (Serve) on an abstract socket
// (Linux's abstract namespace: nothing touches the file system) for the
// duration of a registration exchange, and hands it only to a peer that
// presents the random token (TokenLen bytes) the exporter sent with its
// entry (Fetch). A wrong token gets nothing; the server stops once the
// expected number of peers fetched (Expect), at its context's end, or on
// Close. internal/regcache uses it while ranks register buffers.
package fdpass
