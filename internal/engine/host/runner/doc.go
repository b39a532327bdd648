// Package runner is the host backend's step runner: it runs one rank's
// algo.Plan (the step schedules of package algo: rings, trees, direct
// exchanges) over host memory and transport connections, one plan at a
// time.
//
// The contract: Reset gives a Runner its plan's setting (this rank, the
// operation's descriptor, the connections to every peer the plan names,
// already connected, how many sends the steps make to each peer, the
// element size, the reduction and the send, receive and scratch buffers);
// Run then executes the steps and waits for every send it posted, or
// Steps runs some of them and End finishes, so that a caller can send a
// plan's leading sends at once and leave the rest to another goroutine.
// One goroutine drives a runner; a runner is kept and reused from one
// plan to the next, so that a repeated collective allocates nothing.
//
// A send that its connection buffers now without waiting
// (transport.Buffered: a shared-memory ring with room, a short message on
// a network connection) is sent on the runner's goroutine; the others are
// posted to a goroutine per peer, started on demand, and complete when
// the peer took the bytes. Receives check the message's descriptor
// (package opdesc) before they use a byte, and reduce straight out of the
// transport's pieces, carrying an element a piece split over to the
// next. A step that writes a range first waits for the posted sends still
// reading it; an in-place copy, which writes nothing, does not wait
// (issue 16). A wait that times out is an opdesc.WaitError naming the
// peer, with a note on what was last heard from it (Peer.Note).
//
// Its user is the host backend (package host), which keeps one Runner per
// channel; the backend's connection to a peer is the Peer.
package runner
