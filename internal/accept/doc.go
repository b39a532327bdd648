// Package accept is the accept loop every gccl listener runs (the bootstrap
// root, each rank's bootstrap mesh listener and the TCP transport's
// listener).
//
// It keeps accepting through errors that are not the listener's end: a
// burst of EMFILE or ENFILE (fd exhaustion), ECONNABORTED and the like make
// it sleep, 5 ms doubling up to 1 s, and try again, as net/http's Server
// does, instead of stopping the listener for the life of the process. Only
// a closed listener ends the loop.
//
// It also bounds the connections that have not yet authenticated: at most
// MaxPending handshakes run at once, each in its own goroutine; while that
// many are in flight the loop stops accepting and new connections wait in
// the kernel's backlog. A handshake releases its slot by calling the done
// function it is given (or by returning), so a connection that
// authenticated and lives on no longer counts.
package accept
