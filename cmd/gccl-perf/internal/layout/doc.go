// Package layout is where one operation's data lies on one rank at one
// size: the send and receive regions within the rank's memory, out of
// place as two buffers or in place overlapping as NCCL defines it, the
// operation's count argument and the size nccl-tests reports for it.
package layout
