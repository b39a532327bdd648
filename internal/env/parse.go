package env

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gccl/gccl/internal/algo"
)

// Warning is one variable whose value could not be parsed: the name it was
// read under (the GCCL_ or the NCCL_ one), the value, what a valid value
// looks like and what gccl uses instead.
type Warning struct {
	Var, Value, Want, Using string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s=%q is not %s; using %s", w.Var, w.Value, w.Want, w.Using)
}

// logWarnings logs each of s's warnings once, as a WARN of subsystem ENV.
func logWarnings(s *Settings) {
	if len(s.Warnings) == 0 {
		return
	}
	log := loggerFor(s, "ENV")
	for _, w := range s.Warnings {
		log.Warn("ignoring a bad environment value: "+w.String(), "var", w.Var, "value", w.Value, "using", w.Using)
	}
}

// loader reads variables through lookup, recording parse failures. An
// empty variable counts as unset.
type loader struct {
	lookup func(string) (string, bool)
	warns  []Warning
}

// raw returns the value of name, or of its NCCL alias, and the name it
// was found under.
func (l *loader) raw(name string) (val, from string, ok bool) {
	if v, ok := l.lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), name, true
	}
	for _, v := range Vars {
		if v.Name == name && v.NCCL != "" {
			if s, ok := l.lookup(v.NCCL); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s), v.NCCL, true
			}
		}
	}
	return "", name, false
}

func (l *loader) warn(from, val, want string, using any) {
	u := fmt.Sprint(using)
	if u == "" {
		u = "the default (empty)"
	}
	l.warns = append(l.warns, Warning{Var: from, Value: val, Want: want, Using: u})
}

func (l *loader) str(name, def string) string {
	if v, _, ok := l.raw(name); ok {
		return v
	}
	return def
}

// choice reads one of opts (case-insensitive) and returns it as spelled in
// opts; anything else warns and returns def.
func (l *loader) choice(name, def string, opts ...string) string {
	v, from, ok := l.raw(name)
	if !ok {
		return def
	}
	for _, o := range opts {
		if strings.EqualFold(v, o) {
			return o
		}
	}
	l.warn(from, v, "one of "+strings.Join(opts, ", "), def)
	return def
}

func (l *loader) boolean(name string, def bool) bool {
	v, from, ok := l.raw(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	l.warn(from, v, "a boolean (0 or 1)", map[bool]int{false: 0, true: 1}[def])
	return def
}

// optBoolean is boolean with no default: nil when the variable is unset
// or does not parse (which warns).
func (l *loader) optBoolean(name string) *bool {
	if _, _, ok := l.raw(name); !ok {
		return nil
	}
	n := len(l.warns)
	v := l.boolean(name, false)
	if len(l.warns) > n {
		l.warns[n].Using = "the backend's default"
		return nil
	}
	return &v
}

// nvls reads GCCL_NVLS_ENABLE: on only when exactly 1. Any value but 0 or 1
// warns, and NVLS stays off.
func (l *loader) nvls(name string) bool {
	v, from, ok := l.raw(name)
	if ok && v != "0" && v != "1" {
		l.warn(from, v, "0 or 1 (NVLink SHARP is enabled only by exactly 1)", "0 (NVLS off)")
	}
	return ok && v == "1"
}

// algos reads an algorithm list (algo.ParseAllowed: ring, tree, direct,
// zerocopy, pipelined, NCCL's other names ignored, a leading ^ excludes);
// an unknown name warns and allows every algorithm.
func (l *loader) algos(name string) algo.Allowed {
	v, from, ok := l.raw(name)
	if !ok {
		return algo.AllAlgorithms
	}
	set, err := algo.ParseAllowed(v)
	if err != nil {
		l.warn(from, v, "a list of ring, tree, direct, zerocopy and pipelined (a leading ^ excludes them)", "every algorithm")
		return algo.AllAlgorithms
	}
	return set
}

// protos reads a protocol list (algo.ParseProtocols: LL, LL128, Simple,
// a leading ^ excludes); an unknown name warns and keeps every protocol.
func (l *loader) protos(name string) algo.Protocols {
	v, from, ok := l.raw(name)
	if !ok {
		return algo.AllProtocols
	}
	set, err := algo.ParseProtocols(v)
	if err != nil {
		l.warn(from, v, "a list of LL, LL128 and Simple (a leading ^ excludes them)", "every protocol")
		return algo.AllProtocols
	}
	return set
}

func (l *loader) integer(name string, def int) int {
	v, from, ok := l.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		l.warn(from, v, "a non-negative integer", number(def))
		return def
	}
	return n
}

// number shows a numeric default; 0 means "gccl chooses".
func number(def int) string {
	if def == 0 {
		return "0 (automatic)"
	}
	return strconv.Itoa(def)
}

// size reads a byte count: a non-negative integer, optionally followed by
// K, M or G (binary multiples; "KiB", "MB" and lower case work too).
func (l *loader) size(name string, def int) int {
	v, from, ok := l.raw(name)
	if !ok {
		return def
	}
	n, ok := parseSize(v)
	if !ok {
		l.warn(from, v, "a byte count such as 65536, 64K or 16M", number(def))
		return def
	}
	return n
}

// parseSize parses what size accepts.
func parseSize(v string) (int, bool) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
	shift := 0
	if s != "" {
		switch s[len(s)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
	}
	if shift > 0 {
		s = s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > (1<<40)>>shift {
		return 0, false
	}
	return n << shift, true
}

// spin reads GCCL_HOST_SPIN: a Go duration of zero or more, or "auto" (and
// unset): -1.
func (l *loader) spin(name string) time.Duration {
	v, from, ok := l.raw(name)
	if !ok || v == "auto" {
		return -1
	}
	d, err := time.ParseDuration(v) // "0" needs no unit
	if err != nil || d < 0 {
		l.warn(from, v, "auto, 0 or a duration with a unit, such as 50us", "auto")
		return -1
	}
	return d
}

// nonNegDuration reads a Go duration of zero or more ("0" needs no unit);
// a bare number other than 0 is refused, as by duration.
func (l *loader) nonNegDuration(name string, def time.Duration) time.Duration {
	v, from, ok := l.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		l.warn(from, v, "0 or a duration with a unit, such as 200us or 2ms", def)
		return def
	}
	return d
}

// duration reads a positive Go duration. A bare number is refused (is 30
// seconds or minutes?) with a warning that says how to write it.
func (l *loader) duration(name string, def time.Duration) time.Duration {
	v, from, ok := l.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		l.warn(from, v, "a positive duration with a unit, such as 30s or 5m", def)
		return def
	}
	return d
}
