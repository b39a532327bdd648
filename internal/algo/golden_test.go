package algo

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the expected schedules under testdata/")

// TestGolden checks the schedules against testdata/*.txt. Each file starts
// with a "build key=value ..." line, then "----", then every rank's plan.
// Run with -update to rewrite them after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			head, _, _ := strings.Cut(string(raw), "----\n")
			p, err := parseBuildLine(strings.TrimSpace(head))
			require.NoError(t, err)
			var out strings.Builder
			for r := range p.NRanks {
				p.Rank = r
				plan, err := Build(p)
				require.NoError(t, err)
				out.WriteString(plan.String())
			}
			got := head + "----\n" + out.String()
			if *update {
				require.NoError(t, os.WriteFile(f, []byte(got), 0o644))
				return
			}
			require.Equal(t, string(raw), got)
		})
	}
}

func parseBuildLine(line string) (Params, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "build" {
		return Params{}, fmt.Errorf("first line %q does not start with build", line)
	}
	p := Params{ElemSize: 1}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "kind":
			p.Kind, err = ParseKind(v)
		case "algo":
			p.Algo, err = ParseAlgorithm(v)
		case "nranks":
			_, err = fmt.Sscan(v, &p.NRanks)
		case "count":
			_, err = fmt.Sscan(v, &p.Count)
		case "elem":
			_, err = fmt.Sscan(v, &p.ElemSize)
		case "root":
			_, err = fmt.Sscan(v, &p.Root)
		case "chunk":
			_, err = fmt.Sscan(v, &p.ChunkBytes)
		case "channels":
			_, err = fmt.Sscan(v, &p.Channels)
		case "channel":
			_, err = fmt.Sscan(v, &p.Channel)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}
