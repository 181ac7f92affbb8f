// Package rsschart draws what the benchmark drivers chart of a server's
// resident memory over a session (bench/web, bench/servers): a line of
// RSS samples per configuration, the load's bursts shaded beneath them,
// and the plot written as a PNG.
package rsschart

import (
	"image/color"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Shade adds a light grey band over the whole height of p from start to
// end, beneath whatever is added after it.
func Shade(p *plot.Plot, start, end time.Duration) error {
	band, err := plotter.NewPolygon(plotter.XYs{
		{X: start.Seconds(), Y: 0}, {X: end.Seconds(), Y: 0},
		{X: end.Seconds(), Y: 1e6}, {X: start.Seconds(), Y: 1e6}})
	if err != nil {
		return err
	}
	band.Color = color.RGBA{R: 0xee, G: 0xee, B: 0xee, A: 0xff}
	band.LineStyle.Width = 0
	p.Add(band)
	return nil
}

// Line returns the line of n RSS samples, sample(i) giving the i-th
// one's time and bytes, in seconds and MiB, and its highest value in MiB.
func Line(n int, sample func(i int) (time.Duration, uint64)) (*plotter.Line, float64, error) {
	xy := make(plotter.XYs, n)
	var top float64
	for i := range xy {
		t, rss := sample(i)
		xy[i].X, xy[i].Y = t.Seconds(), float64(rss)/(1<<20)
		top = max(top, xy[i].Y)
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, 0, err
	}
	l.Width = vg.Points(1.5)
	return l, top, nil
}

// Dash draws l dashed: a second configuration in the colour of the first.
func Dash(l *plotter.Line) {
	l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
}

// WritePNG draws p w by h at 110 dpi into a PNG file at path.
func WritePNG(p *plot.Plot, path string, w, h vg.Length) error {
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
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
