package testbed

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Route netlink pieces the syscall package does not name.
const (
	iflaNetNSFD  = 28 // IFLA_NET_NS_FD
	iflaInfoKind = 1  // IFLA_INFO_KIND
	iflaInfoData = 2  // IFLA_INFO_DATA
	vethInfoPeer = 1  // VETH_INFO_PEER
	nlaNested    = 1 << 15
)

// rtnl is a route netlink socket bound to the network namespace it was
// opened in (openRTNL): every request acts on that namespace, whichever
// thread sends it.
type rtnl struct {
	fd  int
	seq uint32
}

// openRTNL opens a route netlink socket in the calling thread's network
// namespace. Replies must arrive within a few seconds.
func openRTNL() (*rtnl, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening a route netlink socket: %w", err)
	}
	tv := syscall.NsecToTimeval(int64(5 * time.Second))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("netlink receive timeout: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("binding a route netlink socket: %w", err)
	}
	return &rtnl{fd: fd}, nil
}

func (r *rtnl) Close() error {
	if r == nil || r.fd < 0 {
		return nil
	}
	err := syscall.Close(r.fd)
	r.fd = -1
	return err
}

// attr encodes one netlink attribute (padded to 4 bytes).
func attr(typ uint16, data []byte) []byte {
	n := syscall.SizeofRtAttr + len(data)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[syscall.SizeofRtAttr:], data)
	return b
}

// nest encodes a nested attribute holding the concatenated children.
func nest(typ uint16, children ...[]byte) []byte {
	var data []byte
	for _, c := range children {
		data = append(data, c...)
	}
	return attr(typ|nlaNested, data)
}

func cstr(s string) []byte { return append([]byte(s), 0) }

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// ifinfo encodes a struct ifinfomsg.
func ifinfo(index int32, flags, change uint32) []byte {
	b := make([]byte, syscall.SizeofIfInfomsg)
	b[0] = syscall.AF_UNSPEC
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	return b
}

// do sends one request and returns the payloads of the kernel's replies
// other than the acknowledgement; a negative acknowledgement is an error.
func (r *rtnl) do(typ uint16, flags uint16, body ...[]byte) ([][]byte, error) {
	r.seq++
	msg := make([]byte, syscall.NLMSG_HDRLEN)
	for _, b := range body {
		msg = append(msg, b...)
	}
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], flags|syscall.NLM_F_REQUEST|syscall.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:], r.seq)
	if err := syscall.Sendto(r.fd, msg, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, err
	}
	var out [][]byte
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(r.fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("waiting for the kernel's netlink answer: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Header.Seq != r.seq {
				continue
			}
			switch m.Header.Type {
			case syscall.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return nil, fmt.Errorf("short netlink error message")
				}
				if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return nil, syscall.Errno(-e)
				}
				return out, nil
			case syscall.NLMSG_DONE:
				return out, nil
			default:
				out = append(out, append([]byte(nil), m.Data...)) // buf is reused
			}
		}
	}
}

// linkIndex returns the index of the interface called name.
func (r *rtnl) linkIndex(name string) (int32, error) {
	replies, err := r.do(syscall.RTM_GETLINK, 0, ifinfo(0, 0, 0), attr(syscall.IFLA_IFNAME, cstr(name)))
	if err != nil {
		return 0, fmt.Errorf("looking up interface %s: %w", name, err)
	}
	for _, m := range replies {
		if len(m) >= syscall.SizeofIfInfomsg {
			return int32(binary.NativeEndian.Uint32(m[4:])), nil
		}
	}
	return 0, fmt.Errorf("looking up interface %s: no answer", name)
}

// addVeth creates the pair name (here) and peer, the peer put straight into
// the network namespace open at peerNS.
func (r *rtnl) addVeth(name, peer string, peerNS *os.File) error {
	peerInfo := append(ifinfo(0, 0, 0), attr(syscall.IFLA_IFNAME, cstr(peer))...)
	peerInfo = append(peerInfo, attr(iflaNetNSFD, u32(uint32(peerNS.Fd())))...)
	_, err := r.do(syscall.RTM_NEWLINK, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL,
		ifinfo(0, 0, 0), attr(syscall.IFLA_IFNAME, cstr(name)),
		nest(syscall.IFLA_LINKINFO, attr(iflaInfoKind, cstr("veth")),
			nest(iflaInfoData, attr(vethInfoPeer, peerInfo))))
	if err != nil {
		return fmt.Errorf("creating veth pair %s/%s: %w", name, peer, err)
	}
	return nil
}

// addBridge creates a bridge called name.
func (r *rtnl) addBridge(name string) error {
	_, err := r.do(syscall.RTM_NEWLINK, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL,
		ifinfo(0, 0, 0), attr(syscall.IFLA_IFNAME, cstr(name)),
		nest(syscall.IFLA_LINKINFO, attr(iflaInfoKind, cstr("bridge"))))
	if err != nil {
		return fmt.Errorf("creating bridge %s: %w", name, err)
	}
	return nil
}

// up sets interface name up, attached to the bridge master when master is
// not empty.
func (r *rtnl) up(name, master string) error {
	idx, err := r.linkIndex(name)
	if err != nil {
		return err
	}
	body := [][]byte{ifinfo(idx, syscall.IFF_UP, syscall.IFF_UP)}
	if master != "" {
		m, err := r.linkIndex(master)
		if err != nil {
			return err
		}
		body = append(body, attr(syscall.IFLA_MASTER, u32(uint32(m))))
	}
	if _, err := r.do(syscall.RTM_NEWLINK, 0, body...); err != nil {
		return fmt.Errorf("setting %s up: %w", name, err)
	}
	return nil
}

// addAddr gives interface name the IPv4 address and prefix p.
func (r *rtnl) addAddr(name string, p netip.Prefix) error {
	idx, err := r.linkIndex(name)
	if err != nil {
		return err
	}
	msg := make([]byte, syscall.SizeofIfAddrmsg)
	msg[0] = syscall.AF_INET
	msg[1] = byte(p.Bits())
	binary.NativeEndian.PutUint32(msg[4:], uint32(idx))
	ip := p.Addr().As4()
	_, err = r.do(syscall.RTM_NEWADDR, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL,
		msg, attr(syscall.IFA_LOCAL, ip[:]), attr(syscall.IFA_ADDRESS, ip[:]))
	if err != nil {
		return fmt.Errorf("adding address %v to %s: %w", p, name, err)
	}
	return nil
}

// delLink deletes interface name (a veth pair goes with either end).
func (r *rtnl) delLink(name string) error {
	idx, err := r.linkIndex(name)
	if err != nil {
		return err
	}
	if _, err := r.do(syscall.RTM_DELLINK, 0, ifinfo(idx, 0, 0)); err != nil {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	return nil
}

// down sets interface name down.
func (r *rtnl) down(name string) error {
	idx, err := r.linkIndex(name)
	if err != nil {
		return err
	}
	if _, err := r.do(syscall.RTM_NEWLINK, 0, ifinfo(idx, 0, syscall.IFF_UP)); err != nil {
		return fmt.Errorf("setting %s down: %w", name, err)
	}
	return nil
}
