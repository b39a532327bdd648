package topo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLinkGolden: the classification of the driver's attributes, as the
// machines we know answer them.
func TestLinkGolden(t *testing.T) {
	for _, c := range []struct {
		name  string
		attrs P2PAttrs
		want  LinkKind
	}{
		{"H100/H200 SXM through NVSwitch", P2PAttrs{Access: true, NativeAtomic: true}, LinkNVLink},
		{"PCIe GPUs under one switch or root", P2PAttrs{Access: true}, LinkPCIe},
		{"no peer access (across sockets, or disabled)", P2PAttrs{}, LinkNone},
		{"atomics reported without access", P2PAttrs{NativeAtomic: true}, LinkNone},
	} {
		assert.Equal(t, c.want, Link(c.attrs), c.name)
	}
}

// TestAgree: symmetric, unknown yields, the slower known view wins.
func TestAgree(t *testing.T) {
	golden := map[[2]LinkKind]LinkKind{
		{LinkUnknown, LinkUnknown}:       LinkUnknown,
		{LinkUnknown, LinkPCIe}:          LinkPCIe,
		{LinkUnknown, LinkNVLink}:        LinkNVLink,
		{LinkNVLink, LinkNVLink}:         LinkNVLink,
		{LinkNVLink, LinkPCIe}:           LinkPCIe,
		{LinkPCIe, LinkNone}:             LinkNone,
		{LinkSameDevice, LinkSameDevice}: LinkSameDevice,
		{LinkUnknown, LinkKind(200)}:     LinkUnknown,
		{LinkNVLink, LinkKind(200)}:      LinkNVLink,
	}
	for in, want := range golden {
		assert.Equal(t, want, Agree(in[0], in[1]), "%v", in)
		assert.Equal(t, want, Agree(in[1], in[0]), "%v reversed", in)
	}
	for a := range numLinkKinds + 1 {
		for b := range numLinkKinds + 1 {
			assert.Equal(t, Agree(a, b), Agree(b, a))
		}
	}
	assert.Equal(t, "NVLink", LinkNVLink.String())
	assert.Equal(t, "same device", LinkSameDevice.String())
	assert.Equal(t, "LinkKind(9)", LinkKind(9).String())
}
