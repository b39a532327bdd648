// Package msg is what every transport's messages share: the descriptor a
// message carries (Desc, DescSize) and Expect, the accept function that
// takes a message of a known length.
//
// Package transport re-exports it; the shared-memory transport
// (transport/internal/shm) cannot import transport, which imports it, so it
// uses this package directly. (Network providers know nothing of
// descriptors: transport's net adapter puts them in its message header.)
package msg
