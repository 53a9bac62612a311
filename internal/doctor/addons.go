package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
)

// AddonCharts checks that the chart source answers and holds every chart
// the addon table pins, at its digest.
func AddonCharts(ctx context.Context, src *charts.Source) Result {
	const check = "addon charts"
	var missing, unreachable []string
	all := addons.Charts()
	for _, c := range all {
		err := src.Check(ctx, c)
		switch {
		case err == nil:
		case errors.Is(err, charts.ErrNotFound) || errors.Is(err, charts.ErrDigest):
			missing = append(missing, err.Error())
		default:
			unreachable = append(unreachable, err.Error())
		}
	}
	const fix = "where the upstream repositories can be reached, run `magnetite addons mirror DIR`; copy DIR here and set [addons] source = DIR (or serve DIR over HTTP and set source to its URL)"
	switch {
	case len(unreachable) > 0:
		return fail(check, fix, "[addons] source %s does not answer for %d of %d pinned charts: %s", src, len(unreachable), len(all), firstFew(unreachable))
	case len(missing) > 0:
		return fail(check, fix, "[addons] source %s lacks %d of %d pinned charts: %s", src, len(missing), len(all), firstFew(missing))
	}
	return pass(check, "all %d pinned charts resolve at %s", len(all), src)
}

func firstFew(errs []string) string {
	if len(errs) > 3 {
		return strings.Join(errs[:3], "; ") + fmt.Sprintf("; and %d more", len(errs)-3)
	}
	return strings.Join(errs, "; ")
}
