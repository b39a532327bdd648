// Package p2p is the public point-to-point API: Send and Recv, and the
// patterns NCCL documents as grouped send/receive: Scatter, Gather,
// AllToAll, AllToAllv and NeighborExchange. Each pattern is one launch, so
// its sends and receives progress together and cannot deadlock; the k-th
// send from a rank to a peer matches that peer's k-th receive from the rank.
// Send and Recv alone are one launch each: pair them across ranks, or put
// them in a group (package group) to post several at once.
package p2p
