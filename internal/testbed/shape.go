package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ErrNoTC means shaping was asked for and tc(8) is not installed.
var ErrNoTC = errors.New("testbed: link shaping (Config.Rate, Config.Delay) needs tc(8), which is not in PATH; install iproute2 or leave the links unshaped")

func haveTC() bool {
	_, err := exec.LookPath("tc")
	return err == nil
}

// qdisc returns the tc arguments after "qdisc add dev DEV root" that shape
// a link to rate bits/s and delay: netem when there is a delay (it also
// limits the rate), else a token bucket.
func qdisc(rate int64, delay time.Duration) []string {
	if delay > 0 {
		args := []string{"netem", "delay", strconv.FormatInt(delay.Microseconds(), 10) + "us"}
		if rate > 0 {
			args = append(args, "rate", strconv.FormatInt(rate, 10)+"bit")
		}
		return args
	}
	burst := max(rate/8/100, 64<<10) // 10 ms at the rate
	return []string{"tbf", "rate", strconv.FormatInt(rate, 10) + "bit",
		"burst", strconv.FormatInt(burst, 10), "latency", "100ms"}
}

// Link is how one host's link is shaped, the same both ways.
type Link struct {
	Rate  int64         // bits per second; 0: no limit
	Delay time.Duration // one way; 0: none (needs netem)
}

func (l Link) shaped() bool { return l.Rate > 0 || l.Delay > 0 }

// link returns host i's Link.
func (c Config) link(i int) Link {
	if l, ok := c.Links[i]; ok {
		return l
	}
	return Link{c.Rate, c.Delay}
}

// shaped reports whether any link is shaped.
func (c Config) shaped() bool {
	for i := range c.Hosts {
		if c.link(i).shaped() {
			return true
		}
	}
	return false
}

// shape shapes the links Config asks for.
func (b *Bed) shape() error {
	for i := range b.hosts {
		if l := b.cfg.link(i); l.shaped() {
			if err := b.Shape(i, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// Shape limits host i's link both ways: its eth0 (what it sends) and the
// switch's port h<i> (what it receives); a zero Link removes the limits.
// It may be called while ranks run.
func (b *Bed) Shape(i int, l Link) error {
	if b.sw == nil {
		return errors.New("testbed: Shape needs the bed's creator")
	}
	if i < 0 || i >= len(b.hosts) {
		return fmt.Errorf("testbed: host %d: the bed has %d", i, len(b.hosts))
	}
	if !haveTC() {
		return ErrNoTC
	}
	h := b.hosts[i]
	for _, end := range []struct {
		hd  *holder
		dev string
	}{{h.h, "eth0"}, {b.sw, "h" + strconv.Itoa(i)}} {
		args := []string{"qdisc", "del", "dev", end.dev, "root"}
		if l.shaped() {
			args = append([]string{"qdisc", "replace", "dev", end.dev, "root"}, qdisc(l.Rate, l.Delay)...)
		}
		if err := tc(end.hd, args); err != nil {
			if !l.shaped() && strings.Contains(err.Error(), "No such file") {
				continue // nothing to remove
			}
			return err
		}
	}
	return nil
}

// tc runs tc with args in the holder's namespaces.
func tc(h *holder, args []string) error {
	cmd := exec.Command("tc", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := inNS(h.ns, cmd.Start)
	if err == nil {
		err = cmd.Wait()
	}
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(out.String())
	if strings.Contains(msg, "qdisc kind is unknown") {
		kind := args[len(args)-1]
		if len(args) > 5 {
			kind = args[5]
		}
		return fmt.Errorf("testbed: this kernel has no %s qdisc (sch_%s), so links cannot be shaped that way (%s); drop the delay (netem) or the rate (tbf)", kind, kind, msg)
	}
	return fmt.Errorf("testbed: tc %s: %v: %s", strings.Join(cmd.Args[1:], " "), err, msg)
}

// Cut unplugs host i's cable (up false) or plugs it back (true): the
// switch's port h<i> goes down or up. The host sees nothing (its eth0 stays
// up); its packets are dropped, as when a machine dies or its link fails
// (no FIN, no RST: peers notice only by their deadlines).
func (b *Bed) Cut(i int, up bool) error {
	if b.sw == nil {
		return errors.New("testbed: Cut needs the bed's creator")
	}
	if i < 0 || i >= len(b.hosts) {
		return fmt.Errorf("testbed: host %d: the bed has %d", i, len(b.hosts))
	}
	sw, err := b.rtnlIn(b.sw)
	if err != nil {
		return err
	}
	defer sw.Close()
	port := "h" + strconv.Itoa(i)
	if up {
		return sw.up(port, "")
	}
	return sw.down(port)
}
