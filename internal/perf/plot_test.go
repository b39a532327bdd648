package perf

import (
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every line ends at its end point, touches only pixels in its bounding
// box, and has as many pixels as its longer axis is long (plus one).
func TestLineReachesItsEndPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	red := color.RGBA{0xff, 0, 0, 0xff}
	for range 100 {
		x0, y0, x1, y1 := rng.IntN(120), rng.IntN(120), rng.IntN(120), rng.IntN(120)
		img := image.NewRGBA(image.Rect(0, 0, 120, 120))
		done := make(chan struct{})
		go func() { defer close(done); line(img, x0, y0, x1, y1, red) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("line(%d,%d -> %d,%d) does not end", x0, y0, x1, y1)
		}
		n := 0
		for y := range 120 {
			for x := range 120 {
				if img.RGBAAt(x, y) != red {
					continue
				}
				n++
				require.True(t, x >= min(x0, x1) && x <= max(x0, x1) && y >= min(y0, y1) && y <= max(y0, y1),
					"pixel %d,%d outside the box of %d,%d -> %d,%d", x, y, x0, y0, x1, y1)
			}
		}
		require.Equal(t, red, img.RGBAAt(x0, y0))
		require.Equal(t, red, img.RGBAAt(x1, y1))
		require.Equal(t, max(abs(x1-x0), abs(y1-y0))+1, n, "%d,%d -> %d,%d", x0, y0, x1, y1)
	}
}
