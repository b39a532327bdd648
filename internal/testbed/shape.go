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

// shape limits every link, both ways: host i's eth0 (what it sends) and
// the switch's port h<i> (what it receives).
func (b *Bed) shape() error {
	if b.cfg.Rate <= 0 && b.cfg.Delay <= 0 {
		return nil
	}
	q := qdisc(b.cfg.Rate, b.cfg.Delay)
	for _, h := range b.hosts {
		if err := tc(h.h, "eth0", q); err != nil {
			return err
		}
		if err := tc(b.sw, "h"+strconv.Itoa(h.Index), q); err != nil {
			return err
		}
	}
	return nil
}

// tc runs "tc qdisc add dev dev root q..." in the holder's namespaces.
func tc(h *holder, dev string, q []string) error {
	cmd := exec.Command("tc", append([]string{"qdisc", "add", "dev", dev, "root"}, q...)...)
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
		return fmt.Errorf("testbed: this kernel has no %s qdisc (sch_%s), so links cannot be shaped that way (%s); drop -delay (netem) or -rate (tbf)", q[0], q[0], msg)
	}
	return fmt.Errorf("testbed: tc %s: %v: %s", strings.Join(cmd.Args[1:], " "), err, msg)
}
