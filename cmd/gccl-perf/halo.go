package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gccl/gccl/p2p"
)

// parseDims reads -halo: "" (the default grid) or 1 to 3 positive
// dimensions joined by x ("4", "2x2", "2x2x1").
func parseDims(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(strings.ToLower(s), "x")
	if len(parts) > 3 {
		return nil, fmt.Errorf("%q has %d dimensions; give 1 to 3, as NxMxK", s, len(parts))
	}
	dims := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: dimension %d is %q; want a positive number of ranks (2x2, 4x2x1)", s, i, p)
		}
		dims[i] = n
	}
	return dims, nil
}

// grid is the halo grid of a run of nranks: -halo's dimensions, else two
// balanced ones (as MPI_Dims_create(nranks, 2): the larger first);
// periodic unless -haloperiodic=false.
func (c *config) grid(nranks int) (p2p.Cart, error) {
	dims := c.halo
	if dims == nil {
		b := 1
		for f := 1; f*f <= nranks; f++ {
			if nranks%f == 0 {
				b = f
			}
		}
		dims = []int{nranks / b, b}
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	if n != nranks {
		return p2p.Cart{}, fmt.Errorf("-halo %s holds %d ranks and this run has %d; give dimensions whose product is %d", dimsString(dims), n, nranks, nranks)
	}
	periodic := make([]bool, len(dims))
	for i := range periodic {
		periodic[i] = !c.haloOpen
	}
	return p2p.Cart{Dims: dims, Periodic: periodic}, nil
}

// dimsString writes dimensions as -halo takes them (2x2x1).
func dimsString(dims []int) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = strconv.Itoa(d)
	}
	return strings.Join(s, "x")
}
