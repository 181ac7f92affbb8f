package main

import (
	"fmt"
	"image/color"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/idlemux/idlemux/internal/rsschart"
)

// serverColor gives every server the same colour in every chart.
var serverColor = map[string]color.Color{
	"netloop-step": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"netloop":      color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	"gnet":         color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"nbio":         color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"net":          color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
}

// colorOf is a server's colour; a one-loop configuration takes its
// library's colour and is drawn dashed.
func colorOf(name string) (color.Color, bool) {
	base, one := strings.CutSuffix(name, "-1")
	if c, ok := serverColor[base]; ok {
		return c, one
	}
	return color.Black, false
}

// rssChart draws every server's RSS over its session of the given round,
// all on one plot, with the bursts of the first server shaded, as a PNG.
func rssChart(path string, rep *report, round int) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("RSS under bursty SET/GET load (%s, round %d; shaded: bursts of %s)", rep.Load, round+1, firstServer(rep, round))
	p.X.Label.Text = "seconds since the server was ready"
	p.Y.Label.Text = "RSS (MiB)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = false
	var top float64
	shaded := false
	for _, name := range rep.ServerSet {
		for _, s := range rep.Sessions {
			if s.Server != name || s.Round != round || len(s.Samples) == 0 {
				continue
			}
			if !shaded {
				shaded = true
				for _, b := range s.BurstsAt {
					if err := rsschart.Shade(p, b.Start, b.End); err != nil {
						return err
					}
				}
			}
			l, high, err := rsschart.Line(len(s.Samples), func(i int) (time.Duration, uint64) {
				return s.Samples[i].T, s.Samples[i].RSS
			})
			if err != nil {
				return err
			}
			top = max(top, high)
			var dashed bool
			l.Color, dashed = colorOf(name)
			if dashed {
				rsschart.Dash(l)
			}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s (peak %s MiB, 3 s after %s MiB, %.0f req/s)", name, mib(float64(s.Peak)), mib(float64(s.After)), s.RPS), l)
		}
	}
	p.Y.Max = top * 1.45 // room for the legend
	return rsschart.WritePNG(p, path, 9*vg.Inch, 5*vg.Inch)
}

// firstServer names the server whose session of round comes first in the
// report, the one whose bursts the chart shades.
func firstServer(rep *report, round int) string {
	for _, name := range rep.ServerSet {
		for _, s := range rep.Sessions {
			if s.Server == name && s.Round == round && len(s.Samples) > 0 {
				return name
			}
		}
	}
	return ""
}
