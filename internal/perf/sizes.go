package perf

import (
	"fmt"
	"strconv"
	"strings"
)

// Sizes returns the byte sizes of a sweep from min to max (inclusive), each
// step multiplying by factor when factor > 1, else adding step. Sizes are
// rounded down to a multiple of align (at least align, except a 0 minimum).
func Sizes(min, max int64, factor float64, step int64, align int64) ([]int64, error) {
	if min < 0 || max < min {
		return nil, fmt.Errorf("size range %d..%d is empty: need 0 <= min <= max", min, max)
	}
	if factor <= 1 && step <= 0 {
		return nil, fmt.Errorf("need a factor > 1 or a step > 0 to advance from %d to %d", min, max)
	}
	if align < 1 {
		align = 1
	}
	var out []int64
	for s := min; s <= max; {
		a := s / align * align
		if a == 0 && s > 0 {
			a = align
		}
		if len(out) == 0 || out[len(out)-1] != a {
			out = append(out, a)
		}
		next := s + step
		if factor > 1 {
			next = int64(float64(s) * factor)
			if s == 0 {
				next = align
			}
		}
		if next <= s {
			next = s + 1
		}
		s = next
	}
	return out, nil
}

// ParseSize reads a byte count with an optional K, M or G suffix (powers of 1024),
// as nccl-tests' -b and -e flags do.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(t, "B")
	mul := int64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mul, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mul, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mul, t = 1<<30, t[:len(t)-1]
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a non-negative number with an optional K, M or G suffix", s)
	}
	return v * mul, nil
}

// FormatSize prints a byte count the short way (8, 1K, 64M, 1G).
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return strconv.FormatInt(n, 10)
}
