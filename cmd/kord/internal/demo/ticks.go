package demo

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// plainTicks are gonum's default ticks labelled as whole numbers with
// thousands separated ("50 000", not "50000.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = thousands(int64(math.Round(ts[i].Value)))
		}
	}
	return ts
}

// thousands writes n with a thin space between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "\u2009" + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
