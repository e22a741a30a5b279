package tsne

import (
	"image/color"
	"math"
)

// palette returns n colours for categories, each as far as possible (in CIELAB) from those before it and
// from black and white: the greedy maximin of Glasbey et al. (2007), "Colour displays for categorical
// images", over a grid of hues, saturations and values. Hues spaced by the golden ratio (tried first, with
// two saturations and three values in turn) left two of 150 labels 2 RGB steps apart; this keeps all 150
// at least 11 ΔE apart. The first m colours do not depend on n. Past the grid's 810 the sequence repeats.
func palette(n int) []color.RGBA {
	type cand struct {
		rgb  color.RGBA
		lab  [3]float64
		dist float64 // to the nearest colour already taken (or black, white)
	}
	var cands []cand
	black, white := toLab(color.RGBA{A: 255}), toLab(color.RGBA{R: 255, G: 255, B: 255, A: 255})
	for hue := 0; hue < 360; hue += 4 {
		for _, s := range []float64{0.4, 0.65, 0.9} {
			for _, v := range []float64{0.5, 0.72, 0.95} {
				rgb := hsv(float64(hue)/360, s, v)
				lab := toLab(rgb)
				cands = append(cands, cand{rgb, lab, min(labDist(lab, black), labDist(lab, white))})
			}
		}
	}
	out := make([]color.RGBA, n)
	for k := range out {
		if k >= len(cands) {
			out[k] = out[k-len(cands)]
			continue
		}
		best := 0
		for c := range cands {
			if cands[c].dist > cands[best].dist {
				best = c // strict: ties go to the first in grid order
			}
		}
		out[k] = cands[best].rgb
		chosen := cands[best].lab
		for c := range cands {
			cands[c].dist = min(cands[c].dist, labDist(cands[c].lab, chosen))
		}
	}
	return out
}

// hsv converts hue, saturation and value in [0, 1] to an opaque RGB colour.
func hsv(h, s, v float64) color.RGBA {
	h6 := h * 6
	f := h6 - math.Floor(h6)
	p, q, t := v*(1-s), v*(1-s*f), v*(1-s*(1-f))
	var r, g, b float64
	switch int(h6) % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	to8 := func(x float64) uint8 { return uint8(math.Round(x * 255)) }
	return color.RGBA{R: to8(r), G: to8(g), B: to8(b), A: 255}
}

// toLab converts an sRGB colour to CIELAB (D65 white), where Euclidean distance approximates perceived
// difference.
func toLab(c color.RGBA) [3]float64 {
	lin := func(u uint8) float64 {
		x := float64(u) / 255
		if x <= 0.04045 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	r, g, b := lin(c.R), lin(c.G), lin(c.B)
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return t*24389/27/116 + 16.0/116
	}
	fx, fy, fz := f(x), f(y), f(z)
	return [3]float64{116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)}
}

func labDist(a, b [3]float64) float64 {
	return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
}
