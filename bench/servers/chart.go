package main

import (
	"fmt"
	"image/color"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
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
					band, err := plotter.NewPolygon(plotter.XYs{
						{X: b.Start.Seconds(), Y: 0}, {X: b.End.Seconds(), Y: 0},
						{X: b.End.Seconds(), Y: 1e6}, {X: b.Start.Seconds(), Y: 1e6}})
					if err != nil {
						return err
					}
					band.Color = color.RGBA{R: 0xee, G: 0xee, B: 0xee, A: 0xff}
					band.LineStyle.Width = 0
					p.Add(band)
				}
			}
			xy := make(plotter.XYs, len(s.Samples))
			for i, x := range s.Samples {
				xy[i].X, xy[i].Y = x.T.Seconds(), float64(x.RSS)/(1<<20)
				top = max(top, xy[i].Y)
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			var dashed bool
			l.Color, dashed = colorOf(name)
			l.Width = vg.Points(1.5)
			if dashed {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s (peak %s MiB, 3 s after %s MiB, %.0f req/s)", name, mib(float64(s.Peak)), mib(float64(s.After)), s.RPS), l)
		}
	}
	p.Y.Max = top * 1.45 // room for the legend
	c := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 5*vg.Inch), vgimg.UseDPI(110))
	p.Draw(draw.New(c))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
