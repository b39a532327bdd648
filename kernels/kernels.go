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

//go:embed *.cu *.cuh
var sources embed.FS

const (
	fatbinPath = "fatbin/gccl.fatbin"
	hashPath   = "fatbin/sources.sha256"
)

// Fatbin returns the embedded module image for cuModuleLoadData, after
// checking it against the hashes build.sh recorded. It fails with
// gccl.ErrSystem when the fatbin has not been built or is stale.
func Fatbin() ([]byte, error) {
	if img := overridden(); img != nil {
		return img, nil
	}
	if dir := env.Get().FatbinDir; dir != "" {
		if err := UseBuilt(dir); err != nil {
			return nil, fmt.Errorf("GCCL_FATBIN_DIR: %w", err)
		}
		return overridden(), nil
	}
	img, err := built.ReadFile(fatbinPath)
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "kernels",
			"the kernel fatbin is not built; run kernels/build.sh where nvcc 13 is installed and commit kernels/fatbin")
	}
	rec, err := Recorded()
	if err != nil {
		return nil, err
	}
	if got := hexSum(img); got != rec.Fatbin {
		return nil, gccl.Errorf(gccl.SystemError, "kernels", "gccl.fatbin hash %s differs from the recorded %s; rebuild it", got, rec.Fatbin)
	}
	if src := SourcesHash(); src != rec.Sources {
		return nil, gccl.Errorf(gccl.SystemError, "kernels",
			"the fatbin was built from other sources (recorded %s, now %s); rerun kernels/build.sh", rec.Sources, src)
	}
	return img, nil
}

// Built reports whether a fatbin is embedded (fresh or not).
func Built() bool {
	_, err := fs.Stat(built, fatbinPath)
	return err == nil
}

// Hashes are what build.sh recorded in fatbin/sources.sha256.
type Hashes struct {
	Sources string // SourcesHash of the sources the fatbin was built from
	Fatbin  string // sha256 of gccl.fatbin
}

// Recorded parses fatbin/sources.sha256.
func Recorded() (Hashes, error) {
	b, err := built.ReadFile(hashPath)
	if err != nil {
		return Hashes{}, gccl.Errorf(gccl.SystemError, "kernels", "fatbin/sources.sha256 is missing; rerun kernels/build.sh")
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

// SourcesHash is the hash build.sh records: the sha256 of the sha256sum
// listing ("<hex>  <name>\n" per file) of every .cu and .cuh file, in byte
// order of their names.
func SourcesHash() string {
	names, err := fs.Glob(sources, "*.cu*")
	if err != nil {
		panic(err) // the pattern is constant and valid
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
