package docs

import (
	"os"
	"strings"
	"testing"

	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEListsEveryEnvironmentVariable: the README's table must name
// every variable internal/env reads, with its NCCL name and default.
func TestREADMEListsEveryEnvironmentVariable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	rows := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "| `GCCL_") {
			name := strings.Trim(strings.Split(line, "|")[1], " `")
			rows[name] = line
		}
	}
	for _, v := range env.Vars {
		row, ok := rows[v.Name]
		if !assert.True(t, ok, "README.md has no row for %s", v.Name) {
			continue
		}
		if v.NCCL != "" {
			assert.Contains(t, row, "`"+v.NCCL+"`", "README row of %s", v.Name)
		}
		if v.Default != "" {
			assert.Contains(t, row, "`"+v.Default+"`", "README row of %s: default", v.Name)
		}
		delete(rows, v.Name)
	}
	assert.Empty(t, rows, "README.md lists variables internal/env does not read")
}
