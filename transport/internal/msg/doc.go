// Package msg is what every transport's messages share: the descriptor a
// message carries (Desc, DescSize) and Expect, the accept function that
// takes a message of a known length.
//
// Package transport re-exports it; its own transports
// (transport/internal/shm, transport/internal/net) cannot import transport,
// which imports them, so they use this package directly.
package msg
