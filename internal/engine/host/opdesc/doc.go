// Package opdesc is the descriptor of an operation that the host backend's
// ranks compare before they use a byte of each other's: every message on a
// transport carries it (in its 24-byte transport.Desc, once per message;
// the transport adds the length), and zero-copy ranks publish it in their
// control blocks and compare it at the first barrier.
//
// A collective's descriptor says its number on the communicator, kind,
// count, type, operator (one value stands for every CreatePreMulSum
// operator) and root; a Send's says its number with that peer in that
// direction, after how many collectives, its count, type and sender. Ranks
// that disagree (count, type, operator, root, kind, order, a skipped
// operation, a Send and a Recv of different sizes) get gccl.ErrInvalidUsage
// naming both ranks, with ErrDisagree in its chain, instead of wrong data.
package opdesc
