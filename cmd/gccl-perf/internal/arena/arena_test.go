package arena

import (
	"errors"
	"testing"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A registrar refusing: an arena that failed half way undoes what it did,
// gccl's registration and the allocation.
func TestNewUndoesOnFailure(t *testing.T) {
	var refused uintptr
	d, _ := perftest.GPU(t)
	regs := perftest.OneRank(t, d)
	a, err := New(d, 4096, true, perftest.CacheRegister(regs), map[string]Registrar{"no": refusing{&refused}})
	require.ErrorContains(t, err, "registration refused")
	assert.Nil(t, a)
	require.NotZero(t, refused)
	_, live := memalloc.Size(refused)
	assert.False(t, live, "the bufreg.MemAlloc memory is freed")
	_, _, found := regs.Lookup(refused, 1)
	assert.False(t, found, "gccl's registration is undone")
	assert.NoError(t, (*Arena)(nil).Free())
}

// refusing is a registrar that refuses, remembering the address.
type refusing struct{ at *uintptr }

func (r refusing) Register(p uintptr, size int) error {
	*r.at = p
	return errors.New("registration refused")
}
func (r refusing) Deregister(p uintptr) error { return nil }
