package kernels

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/gccl/gccl"
)

var override struct {
	mu  sync.Mutex
	img []byte
}

// UseBuilt makes Fatbin return the fatbin that build.sh just wrote into dir
// (gccl.fatbin and sources.sha256) instead of the embedded one. It is for
// GPU test binaries built before the fatbin was committed: build.sh runs on
// the GPU machine, the tests load its output. The fatbin must have been
// built from exactly the sources compiled into this binary.
func UseBuilt(dir string) error {
	img, err := os.ReadFile(filepath.Join(dir, "gccl.fatbin"))
	if err != nil {
		return gccl.Errorf(gccl.InvalidArgument, "dir", "reading the built fatbin: %w", err)
	}
	rec, err := os.ReadFile(filepath.Join(dir, "sources.sha256"))
	if err != nil {
		return gccl.Errorf(gccl.InvalidArgument, "dir", "reading the fatbin's hash record: %w", err)
	}
	h, err := parseHashes(rec)
	if err != nil {
		return err
	}
	if got := hexSum(img); got != h.Fatbin {
		return gccl.Errorf(gccl.InvalidArgument, "dir", "%s/gccl.fatbin hash %s differs from the recorded %s", dir, got, h.Fatbin)
	}
	if src := SourcesHash(); src != h.Sources {
		return gccl.Errorf(gccl.InvalidArgument, "dir", "the fatbin in %s was built from other sources (recorded %s, this binary has %s)", dir, h.Sources, src)
	}
	override.mu.Lock()
	override.img = img
	override.mu.Unlock()
	return nil
}

func overridden() []byte {
	override.mu.Lock()
	defer override.mu.Unlock()
	return override.img
}
