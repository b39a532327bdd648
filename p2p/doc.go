// Package p2p is the public point-to-point API: Send and Recv, and the
// patterns NCCL documents as grouped send/receive: Scatter, Gather,
// AllToAll, AllToAllv, NeighborExchange (one buffer to every neighbour)
// and HaloExchange (a distinct face and halo per neighbour on a 1-, 2- or
// 3-D Cartesian grid, periodic or not). Each pattern is one launch, so
// its sends and receives progress together and cannot deadlock; the k-th
// send from a rank to a peer matches that peer's k-th receive from the rank.
// Send and Recv alone are one launch each: pair them across ranks, or put
// them in a group (package group) to post several at once. Every pattern
// has a group form too (group.Group's AllToAll, AllToAllv, Scatter, Gather
// and NeighborExchange), so it fuses with other operations into one launch;
// both forms build their ops in package internal/pattern.
package p2p
