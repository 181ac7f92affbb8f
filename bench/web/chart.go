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

// configColor gives each configuration the same colour in every chart;
// others are black.
var configColor = map[string]color.Color{
	"on":      color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"off":     color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff},
	"gogc=50": color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"gogc=25": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// rssChart draws the RSS of every configuration's first-round session at
// gap, over the session's time, with the bursts of the first shaded.
func rssChart(path string, rep *report, gap time.Duration) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("examples/web RSS, bursts of %v with %v gaps (first round; shaded: bursts)", rep.Burst, gap)
	p.X.Label.Text = "seconds since the server started"
	p.Y.Label.Text = "RSS (MiB)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	var top float64
	shaded := false
	for _, name := range rep.Configs {
		for _, s := range rep.Sessions {
			if s.Config != name || s.Gap != gap || s.Round != 0 || len(s.Samples) == 0 {
				continue
			}
			if !shaded {
				shaded = true
				for _, b := range s.Bursts {
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
			// A second copy (off.2) takes its configuration's colour,
			// dashed.
			base, _, copied := strings.Cut(name, ".")
			l.Color = color.Black
			if c, ok := configColor[base]; ok {
				l.Color = c
			}
			if copied {
				rsschart.Dash(l)
			}
			p.Add(l)
			p.Legend.Add(name, l)
		}
	}
	p.Y.Max = top * 1.3 // room for the legend
	return rsschart.WritePNG(p, path, 9*vg.Inch, 4.5*vg.Inch)
}
