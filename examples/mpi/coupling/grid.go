package main

// The physics, shared by the distributed solvers and the single-process
// reference so that both do the same arithmetic in the same order: an
// explicit step of the 2-D heat equation on an n×n subdomain with one ghost
// cell around it. The global domain is two subdomains side by side: solver
// A's columns, then solver B's. A's left wall is held at 1, the other outer
// walls at 0; across the interface each solver sees the other's last
// exchanged column as its ghost column.

const kappa = 0.2 // diffusion number: stable below 0.25

// block is a rectangle of cells with a ghost layer: row-major, (ny+2)×(nx+2).
type block struct {
	nx, ny int
	u      []float64
}

func newBlock(nx, ny int) *block {
	return &block{nx: nx, ny: ny, u: make([]float64, (nx+2)*(ny+2))}
}

// at is cell (i, j): i the column 0..nx+1, j the row 0..ny+1 (0 and n+1 are ghosts).
func (b *block) at(i, j int) *float64 { return &b.u[j*(b.nx+2)+i] }

// row and col copy interior row j or column i out of the block.
func (b *block) row(j int) []float64 {
	return append([]float64(nil), b.u[j*(b.nx+2)+1:j*(b.nx+2)+1+b.nx]...)
}

func (b *block) col(i int) []float64 {
	out := make([]float64, b.ny)
	for j := range out {
		out[j] = *b.at(i, j+1)
	}
	return out
}

// setRow and setCol write v into row j (columns 1..nx) or column i (rows 1..ny).
func (b *block) setRow(j int, v []float64) { copy(b.u[j*(b.nx+2)+1:], v[:b.nx]) }

func (b *block) setCol(i int, v []float64) {
	for j := range b.ny {
		*b.at(i, j+1) = v[j]
	}
}

// step advances the interior one time step and returns the sum of the
// squared changes (the residual).
func (b *block) step() float64 {
	next := append([]float64(nil), b.u...)
	var res float64
	for j := 1; j <= b.ny; j++ {
		for i := 1; i <= b.nx; i++ {
			c := *b.at(i, j)
			v := c + kappa*((*b.at(i-1, j)+*b.at(i+1, j))+(*b.at(i, j-1)+*b.at(i, j+1))-4*c)
			next[j*(b.nx+2)+i] = v
			res += (v - c) * (v - c)
		}
	}
	b.u = next
	return res
}

// reference runs both solvers in one process: the result every rank compares
// its block with, and each solver's residual at the last step.
func reference(n, steps, every int) (a, b *block, resA, resB float64) {
	a, b = newBlock(n, n), newBlock(n, n)
	a.setCol(0, fill(n, 1)) // A's left wall
	for s := range steps {
		if s%every == 0 {
			ga, gb := b.col(1), a.col(n) // the interface exchange
			a.setCol(n+1, ga)
			b.setCol(0, gb)
		}
		resA, resB = a.step(), b.step()
	}
	return a, b, resA, resB
}

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
