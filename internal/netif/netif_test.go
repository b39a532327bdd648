package netif

import (
	"net"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFilter(t *testing.T) {
	f := ParseFilter("eth,ib")
	assert.True(t, f.Match("eth0"))
	assert.True(t, f.Match("ib1"))
	assert.False(t, f.Match("lo"))
	f = ParseFilter("^docker,lo")
	assert.False(t, f.Match("docker0"))
	assert.False(t, f.Match("lo"))
	assert.True(t, f.Match("eth0"))
	f = ParseFilter("=eth0")
	assert.True(t, f.Match("eth0"))
	assert.False(t, f.Match("eth01"))
	f = ParseFilter(" ^=eth0, ib0 ")
	assert.False(t, f.Match("eth0"))
	assert.True(t, f.Match("eth01"))
}

func TestUsableAddrPrefersIPv4AndSkipsLinkLocal(t *testing.T) {
	cidr := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		require.NoError(t, err)
		n.IP = ip
		return n
	}
	ip, ok := usableAddr([]net.Addr{cidr("fe80::1/64"), cidr("2001:db8::7/64"), cidr("10.1.2.3/8")})
	require.True(t, ok)
	assert.Equal(t, "10.1.2.3", ip.String())
	ip, ok = usableAddr([]net.Addr{cidr("fe80::1/64"), cidr("2001:db8::7/64"), cidr("2001:db8::8/64")})
	require.True(t, ok)
	assert.Equal(t, "2001:db8::7", ip.String())
	_, ok = usableAddr([]net.Addr{cidr("fe80::1/64")})
	assert.False(t, ok)
}

func TestListenAddr(t *testing.T) {
	ip, err := ListenAddr("=lo")
	require.NoError(t, err)
	assert.True(t, ip.IsLoopback(), "%v", ip)

	_, err = ListenAddr("=no-such-interface")
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)

	ip, err = ListenAddr(" ")
	require.NoError(t, err, "a blank spec is no spec")
	assert.True(t, ip.IsValid())
	if ip, err := ListenAddr("^lo"); err == nil { // machines with only loopback have no answer here
		assert.False(t, ip.IsLoopback(), "%v", ip)
	}
}
