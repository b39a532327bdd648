package kernels

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/gccl/gccl"
)

var override struct {
	mu  sync.Mutex
	img map[string][]byte // by module name
}

// UseBuilt makes the modules' Image return the fatbins that build.sh just
// wrote into dir (<name>.fatbin and its hash record, for each module whose
// fatbin is there) instead of the embedded ones. It is for GPU test
// binaries built before the fatbin was committed: build.sh runs on the GPU
// machine, the tests load its output. A fatbin must have been built from
// exactly the sources compiled into this binary.
func UseBuilt(dir string) error {
	found := map[string][]byte{}
	for _, m := range []Module{Main, Ring} {
		img, err := os.ReadFile(filepath.Join(dir, m.fatbinFile()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return gccl.Errorf(gccl.InvalidArgument, "dir", "reading the built fatbin: %w", err)
		}
		rec, err := os.ReadFile(filepath.Join(dir, m.hash))
		if err != nil {
			return gccl.Errorf(gccl.InvalidArgument, "dir", "reading the hash record of %s: %w", m.fatbinFile(), err)
		}
		h, err := parseHashes(rec)
		if err != nil {
			return err
		}
		if got := hexSum(img); got != h.Fatbin {
			return gccl.Errorf(gccl.InvalidArgument, "dir", "%s/%s hash %s differs from the recorded %s", dir, m.fatbinFile(), got, h.Fatbin)
		}
		if src := m.SourcesHash(); src != h.Sources {
			return gccl.Errorf(gccl.InvalidArgument, "dir", "%s in %s was built from other sources (recorded %s, this binary has %s)", m.fatbinFile(), dir, h.Sources, src)
		}
		found[m.name] = img
	}
	if len(found) == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "dir", "%s holds no fatbin (%s or %s)", dir, Main.fatbinFile(), Ring.fatbinFile())
	}
	override.mu.Lock()
	defer override.mu.Unlock()
	if override.img == nil {
		override.img = map[string][]byte{}
	}
	for name, img := range found {
		override.img[name] = img
	}
	return nil
}

func overridden(m Module) []byte {
	override.mu.Lock()
	defer override.mu.Unlock()
	return override.img[m.name]
}
