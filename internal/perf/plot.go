package perf

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one line of a plot: y against size.
type Series struct {
	Name  string
	Color color.RGBA
	Sizes []int64
	Y     []float64
}

var (
	// ColorGccl and ColorBase are the colours of gccl's and the baseline's lines.
	ColorGccl = color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	ColorBase = color.RGBA{0xd6, 0x27, 0x28, 0xff}
)

// PlotRows draws bus bandwidth (left) and latency (right) against message
// size for gccl and, if present, the baseline, and writes a PNG.
func PlotRows(w io.Writer, title, baseline string, rows []Row) error {
	var gs, gt, bs, bt Series
	gs, gt = Series{Name: "gccl", Color: ColorGccl}, Series{Name: "gccl", Color: ColorGccl}
	bs, bt = Series{Name: baseline, Color: ColorBase}, Series{Name: baseline, Color: ColorBase}
	for _, r := range rows {
		if r.Size <= 0 {
			continue
		}
		gs.Sizes, gs.Y = append(gs.Sizes, r.Size), append(gs.Y, r.Gccl.BusBW)
		gt.Sizes, gt.Y = append(gt.Sizes, r.Size), append(gt.Y, float64(r.Gccl.Time.Nanoseconds())/1e3)
		if r.Base != nil {
			bs.Sizes, bs.Y = append(bs.Sizes, r.Size), append(bs.Y, r.Base.BusBW)
			bt.Sizes, bt.Y = append(bt.Sizes, r.Size), append(bt.Y, float64(r.Base.Time.Nanoseconds())/1e3)
		}
	}
	img := image.NewRGBA(image.Rect(0, 0, 1200, 500))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	label(img, 10, 16, title)
	bw, lat := []Series{gs}, []Series{gt}
	if len(bs.Sizes) > 0 {
		bw, lat = append(bw, bs), append(lat, bt)
	}
	panel(img, image.Rect(60, 40, 580, 450), "bus bandwidth (GB/s)", false, bw)
	panel(img, image.Rect(660, 40, 1180, 450), "time (us, log)", true, lat)
	return png.Encode(w, img)
}

// panel draws series in r with a log-2 size axis and a linear or log y axis.
func panel(img *image.RGBA, r image.Rectangle, ytitle string, logY bool, ss []Series) {
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for i, sz := range s.Sizes {
			x, y := math.Log2(float64(sz)), yval(s.Y[i], logY)
			minX, maxX = math.Min(minX, x), math.Max(maxX, x)
			minY, maxY = math.Min(minY, y), math.Max(maxY, y)
		}
	}
	if math.IsInf(minX, 1) {
		return
	}
	if !logY {
		minY = 0
	}
	if maxX == minX {
		maxX++
	}
	if maxY == minY {
		maxY++
	}
	px := func(x float64) int { return r.Min.X + int((x-minX)/(maxX-minX)*float64(r.Dx())) }
	py := func(y float64) int { return r.Max.Y - int((y-minY)/(maxY-minY)*float64(r.Dy())) }
	gray := color.RGBA{0xcc, 0xcc, 0xcc, 0xff}
	line(img, r.Min.X, r.Max.Y, r.Max.X, r.Max.Y, color.Black)
	line(img, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y, color.Black)
	for x := math.Ceil(minX); x <= maxX; x += 2 {
		line(img, px(x), r.Min.Y, px(x), r.Max.Y, gray)
		label(img, px(x)-10, r.Max.Y+16, FormatSize(int64(math.Exp2(x))))
	}
	for i := 0; i <= 4; i++ {
		y := minY + (maxY-minY)*float64(i)/4
		line(img, r.Min.X, py(y), r.Max.X, py(y), gray)
		v := y
		if logY {
			v = math.Pow(10, y)
		}
		label(img, r.Min.X-55, py(y)+4, fmt.Sprintf("%.4g", v))
	}
	label(img, r.Min.X, r.Min.Y-6, ytitle+" vs size (B)")
	for k, s := range ss {
		for i := 1; i < len(s.Sizes); i++ {
			x0, y0 := px(math.Log2(float64(s.Sizes[i-1]))), py(yval(s.Y[i-1], logY))
			x1, y1 := px(math.Log2(float64(s.Sizes[i]))), py(yval(s.Y[i], logY))
			line(img, x0, y0, x1, y1, s.Color)
			line(img, x0, y0+1, x1, y1+1, s.Color)
		}
		label(img, r.Max.X-120, r.Min.Y+16+16*k, s.Name) // the swatch is the line drawn below
		line(img, r.Max.X-140, r.Min.Y+12+16*k, r.Max.X-125, r.Min.Y+12+16*k, s.Color)
	}
}

func yval(v float64, logY bool) float64 {
	if logY {
		return math.Log10(math.Max(v, 1e-3))
	}
	return v
}

// line draws a straight line with Bresenham's algorithm.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e // both tests use the error before this step's updates
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

// label draws s in basicfont, which has glyphs for printable ASCII only:
// anything else is drawn as '?' rather than as a missing-glyph box.
func label(img *image.RGBA, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(printable(s))
}

// printable replaces every rune outside printable ASCII with '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
