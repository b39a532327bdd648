// Package shm is gccl's shared-memory transport between ranks on one host:
// the rings behind the "shm" row of package transport's table. It is
// internal to transport/; nothing else connects ranks.
//
// Each direction between two ranks (per channel) is a single-producer
// single-consumer ring in its own file under /dev/shm. The file starts with a
// header page: a magic number and the ring geometry, the two processes' ids,
// the producer's head and the consumer's tail counters and the two "closed"
// flags, each on its own cache line. Slots of a fixed size follow, each with a
// small header holding the number of bytes it carries and, in the first slot
// of a message, the message's length and descriptor. The header page also
// holds one failure record per side (code and message): the producer's ends
// the consumer's Recv once the ring is drained, the consumer's (a refused
// message) fails the producer's Send.
//
// The producer (Sender) copies a message into free slots and publishes each
// with an atomic store of head; the consumer (Receiver) hands every piece to
// its consume callback straight from the shared slot, with no extra copy, and
// frees the slot with an atomic store of tail. One Send is one message,
// starting in a fresh slot (an empty message takes one slot); one Recv
// takes one message.
//
// The producer creates the file under a temporary name and links it into
// place once initialised, so the consumer never maps a half-built ring; the
// consumer unlinks it as soon as it has mapped it, and the producer unlinks it
// again on Close in case the consumer never came. A side that waits (the
// consumer on an empty ring, the producer on a full one) spins briefly,
// yields, then sleeps on a futex beside the other side's counter (package
// futex: headSeq and tailSeq, the low halves of head and tail), which the
// other side wakes when it advances, so a message is taken as soon as it
// is published instead of after a timed sleep; every nap is short enough
// to notice the context's deadline, a local Close and a dead peer.
// A peer that closed its end, or whose process is gone, turns into
// gccl.ErrRemote.
package shm
