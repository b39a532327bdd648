package kernels

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
)

// The fatbin directory always holds README.md, so the embed compiles
// before the fatbin is first built.
//
//go:embed fatbin
var built embed.FS

//go:embed *.cu *.cuh ring/*.cu
var sources embed.FS

// Module is one fatbin that build.sh makes and the engine loads with
// cuModuleLoadData: the peer-memory kernels (Main) or the ring kernels for
// communicators across hosts (Ring). Each records the hash of its own
// sources, so changing one module's sources never forces the other's
// rebuild (the shared .cuh headers count for both).
type Module struct {
	name  string   // build.sh's name for it: fatbin/<name>.fatbin
	hash  string   // its hash record in fatbin/
	globs []string // its sources, as build.sh lists them
}

var (
	// Main holds the peer-memory kernels (every .cu file in kernels/).
	Main = Module{name: "gccl", hash: "sources.sha256", globs: []string{"*.cu", "*.cuh"}}
	// Ring holds the ring kernels (kernels/ring/*.cu, docs/gpunet.md).
	Ring = Module{name: "ring", hash: "ring.sha256", globs: []string{"*.cuh", "ring/*.cu"}}
)

// Name is the module's name in build.sh and its files.
func (m Module) Name() string { return m.name }

func (m Module) fatbinFile() string { return m.name + ".fatbin" }

// Fatbin returns the embedded image of the peer-memory kernels (Main.Image).
func Fatbin() ([]byte, error) { return Main.Image() }

// RingFatbin returns the embedded image of the ring kernels (Ring.Image).
func RingFatbin() ([]byte, error) { return Ring.Image() }

// Image returns the module's image for cuModuleLoadData: the one UseBuilt
// or GCCL_FATBIN_DIR named, else the embedded one, after checking it
// against the hashes build.sh recorded. It fails with gccl.ErrSystem when
// the fatbin has not been built or is stale.
func (m Module) Image() ([]byte, error) {
	if img := overridden(m); img != nil {
		return img, nil
	}
	if dir := env.Get().FatbinDir; dir != "" {
		if err := UseBuilt(dir); err != nil {
			return nil, fmt.Errorf("GCCL_FATBIN_DIR: %w", err)
		}
		if img := overridden(m); img != nil {
			return img, nil
		}
		return nil, gccl.Errorf(gccl.SystemError, "kernels", "GCCL_FATBIN_DIR=%s has no %s", dir, m.fatbinFile())
	}
	img, err := built.ReadFile("fatbin/" + m.fatbinFile())
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "kernels",
			"the kernel fatbin %s is not built; run kernels/build.sh where nvcc 13 is installed and commit kernels/fatbin", m.fatbinFile())
	}
	rec, err := m.Recorded()
	if err != nil {
		return nil, err
	}
	if got := hexSum(img); got != rec.Fatbin {
		return nil, gccl.Errorf(gccl.SystemError, "kernels", "%s hash %s differs from the recorded %s; rebuild it", m.fatbinFile(), got, rec.Fatbin)
	}
	if src := m.SourcesHash(); src != rec.Sources {
		return nil, gccl.Errorf(gccl.SystemError, "kernels",
			"%s was built from other sources (recorded %s, now %s); rerun kernels/build.sh", m.fatbinFile(), rec.Sources, src)
	}
	return img, nil
}

// Built reports whether Main's fatbin is embedded (fresh or not).
func Built() bool { return Main.Built() }

// Built reports whether the module's fatbin is embedded (fresh or not).
func (m Module) Built() bool {
	_, err := fs.Stat(built, "fatbin/"+m.fatbinFile())
	return err == nil
}

// Hashes are what build.sh recorded in fatbin/sources.sha256.
type Hashes struct {
	Sources string // SourcesHash of the sources the fatbin was built from
	Fatbin  string // sha256 of gccl.fatbin
}

// Recorded parses Main's hash record, fatbin/sources.sha256.
func Recorded() (Hashes, error) { return Main.Recorded() }

// Recorded parses the module's hash record in fatbin/.
func (m Module) Recorded() (Hashes, error) {
	b, err := built.ReadFile("fatbin/" + m.hash)
	if err != nil {
		return Hashes{}, gccl.Errorf(gccl.SystemError, "kernels", "fatbin/%s is missing; rerun kernels/build.sh", m.hash)
	}
	return parseHashes(b)
}

// parseHashes parses a sources.sha256 record.
func parseHashes(b []byte) (Hashes, error) {
	var h Hashes
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || len(f[1]) != 64 {
			return Hashes{}, gccl.Errorf(gccl.SystemError, "kernels", "malformed line %q in fatbin/sources.sha256", line)
		}
		switch f[0] {
		case "sources":
			h.Sources = f[1]
		case "fatbin":
			h.Fatbin = f[1]
		}
	}
	if h.Sources == "" || h.Fatbin == "" {
		return Hashes{}, gccl.Errorf(gccl.SystemError, "kernels", "fatbin/sources.sha256 lacks the sources or fatbin hash")
	}
	return h, nil
}

// SourcesHash is Main's sources hash.
func SourcesHash() string { return Main.SourcesHash() }

// SourcesHash is the hash build.sh records for the module: the sha256 of
// the sha256sum listing ("<hex>  <name>\n" per file, names relative to
// kernels/) of its source files, in byte order of their names.
func (m Module) SourcesHash() string {
	var names []string
	for _, g := range m.globs {
		got, err := fs.Glob(sources, g)
		if err != nil {
			panic(err) // the patterns are constant and valid
		}
		names = append(names, got...)
	}
	sort.Strings(names)
	var listing strings.Builder
	for _, n := range names {
		b, err := sources.ReadFile(n)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		fmt.Fprintf(&listing, "%s  %s\n", hexSum(b), n)
	}
	return hexSum([]byte(listing.String()))
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
