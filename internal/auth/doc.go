// Package auth is the challenge-response that every gccl socket handshake
// (bootstrap root, bootstrap mesh, TCP transport) uses to prove that both
// ends hold a unique ID's 128-bit secret without sending it.
//
// The listener opens with a fresh random nonce. The dialer answers with its
// own nonce and HMAC-SHA256(secret, "gccl dialer" ‖ context ‖ listener
// nonce ‖ dialer nonce), where context binds what the dialer claims (the
// rendezvous key, or its transport hello). The listener checks it and
// proves itself with HMAC-SHA256(secret, "gccl listener" ‖ context ‖
// listener nonce ‖ dialer nonce). A captured exchange is useless to a
// replayer: the next connection gets a different listener nonce.
package auth
