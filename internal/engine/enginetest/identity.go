package enginetest

import (
	"crypto/rand"

	"github.com/gccl/gccl/transport"
)

// Identity returns a transport config with a fresh random CommID and
// Secret (what comm derives from the unique ID), to give every rank of one
// test communicator.
func Identity() transport.Config {
	var tc transport.Config
	_, _ = rand.Read(tc.CommID[:]) // crypto/rand.Read does not fail once it has worked
	_, _ = rand.Read(tc.Secret[:])
	return tc
}
