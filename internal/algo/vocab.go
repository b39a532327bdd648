package algo

import (
	"fmt"
	"slices"
	"strings"
)

// Algorithm is a way of moving a collective's data between the ranks. One
// vocabulary serves both backends; where a backend has no implementation of
// an algorithm, it cannot pick it (see doc.go for which runs where).
type Algorithm int

// The algorithms. Auto lets the backend decide.
const (
	Auto Algorithm = iota
	// Ring: message passing around a ring (host schedules).
	Ring
	// Tree: message passing along binary trees (host schedules).
	Tree
	// Direct: one step in which every rank sends its data to every other
	// rank and each rank combines all of it (host schedule; on GPUs the
	// one-shot kernels and the push all-reduce).
	Direct
	// ZeroCopy: ranks map each other's user buffers and each rank reduces
	// or copies its own slice of them in place (host mapped buffers; on
	// GPUs registered buffers). No step schedule.
	ZeroCopy
	// Pipelined: every rank copies its input into its mapped communication
	// buffer, each rank works its slice across all ranks' buffers and the
	// results are copied out, segment by segment (the GPU's bulk-area
	// kernels). No host schedule.
	Pipelined
	numAlgorithms
)

var algoNames = [numAlgorithms]string{"auto", "ring", "tree", "direct", "zerocopy", "pipelined"}

func (a Algorithm) String() string {
	if a >= 0 && a < numAlgorithms {
		return algoNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// ParseAlgorithm returns the algorithm named s (case-insensitive).
func ParseAlgorithm(s string) (Algorithm, error) {
	for a := Auto; a < numAlgorithms; a++ {
		if strings.EqualFold(s, a.String()) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (want %s)", s, strings.Join(algoNames[1:], ", "))
}

// Allowed is a set of algorithms, as restricted by GCCL_ALGO / NCCL_ALGO.
type Allowed uint8

// AllAlgorithms allows every algorithm.
const AllAlgorithms Allowed = 1<<Ring | 1<<Tree | 1<<Direct | 1<<ZeroCopy | 1<<Pipelined

// Has reports whether a is in the set.
func (s Allowed) Has(a Algorithm) bool { return s&(1<<a) != 0 }

// String lists the set's algorithms, comma-separated.
func (s Allowed) String() string {
	var names []string
	for a := Ring; a < numAlgorithms; a++ {
		if s.Has(a) {
			names = append(names, a.String())
		}
	}
	return strings.Join(names, ",")
}

// nccl's algorithm names that gccl does not implement; accepted and ignored.
var foreignAlgos = []string{"nvls", "nvlstree", "collnet", "collnetdirect", "collnetchain", "pat"}

// ParseAllowed parses GCCL_ALGO in NCCL_ALGO syntax: "" allows all,
// "ring,tree" allows those, "^tree" allows all but those. Names are
// case-insensitive; NCCL algorithms gccl lacks (NVLS, CollNet*, PAT) are
// ignored.
func ParseAllowed(s string) (Allowed, error) {
	var set Allowed
	exclude, err := parseList(s, "algorithm", func(name string) error {
		if slices.Contains(foreignAlgos, name) {
			return nil
		}
		a, err := ParseAlgorithm(name)
		if err != nil || a == Auto {
			return fmt.Errorf("unknown algorithm %q (want %s)", name, strings.Join(algoNames[1:], ", "))
		}
		set |= 1 << a
		return nil
	})
	switch {
	case err != nil:
		return 0, err
	case strings.TrimSpace(s) == "":
		return AllAlgorithms, nil
	case exclude:
		return AllAlgorithms &^ set, nil
	}
	return set, nil
}

// Protocol is how a kernel signals that data has arrived.
type Protocol int

// The protocols.
const (
	// Simple: data moves in bulk and separate flags or barriers say when
	// it is there. Every host schedule and every GPU kernel but the
	// one-shots is Simple. It is the fallback that always runs.
	Simple Protocol = iota
	// LL (low latency): every 8 bytes of data travel with a flag in one
	// 16-byte store, so a reader needs no barrier (the GPU's one-shot
	// kernels, through the direct area).
	LL
	// LL128: NCCL's 128-byte variant; gccl implements none. Accepted in
	// GCCL_PROTO so NCCL settings parse.
	LL128
	numProtocols
)

var protoNames = [numProtocols]string{"Simple", "LL", "LL128"}

func (p Protocol) String() string {
	if p >= 0 && p < numProtocols {
		return protoNames[p]
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

// Protocols is a set of protocols, as restricted by GCCL_PROTO / NCCL_PROTO.
type Protocols uint8

// AllProtocols allows every protocol.
const AllProtocols Protocols = 1<<Simple | 1<<LL | 1<<LL128

// Has reports whether p is in the set.
func (s Protocols) Has(p Protocol) bool { return s&(1<<p) != 0 }

// LLForced reports whether LL is to take every operation it can hold, not
// only those up to its size limit: the list allows LL but not Simple.
func (s Protocols) LLForced() bool { return s.Has(LL) && !s.Has(Simple) }

// String lists the set's protocols, comma-separated.
func (s Protocols) String() string {
	var names []string
	for p := Simple; p < numProtocols; p++ {
		if s.Has(p) {
			names = append(names, p.String())
		}
	}
	return strings.Join(names, ",")
}

// ParseProtocols parses GCCL_PROTO in NCCL_PROTO syntax: "" allows all,
// "LL,Simple" allows those, "^LL" all but those; names are
// case-insensitive.
func ParseProtocols(s string) (Protocols, error) {
	var set Protocols
	exclude, err := parseList(s, "protocol", func(name string) error {
		for p := Simple; p < numProtocols; p++ {
			if strings.EqualFold(name, p.String()) {
				set |= 1 << p
				return nil
			}
		}
		return fmt.Errorf("unknown protocol %q (want %s)", name, strings.Join(protoNames[:], ", "))
	})
	switch {
	case err != nil:
		return 0, err
	case strings.TrimSpace(s) == "":
		return AllProtocols, nil
	case exclude:
		return AllProtocols &^ set, nil
	}
	return set, nil
}

// parseList calls add with every lower-cased name of an NCCL-style list
// and reports whether it excludes (a leading ^).
func parseList(s, what string, add func(name string) error) (exclude bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return false, nil
	}
	exclude = strings.HasPrefix(s, "^")
	for _, name := range strings.Split(strings.TrimPrefix(s, "^"), ",") {
		if err := add(strings.ToLower(strings.TrimSpace(name))); err != nil {
			return false, fmt.Errorf("%s list %q: %w", what, s, err)
		}
	}
	return exclude, nil
}
