package api

import (
	"fmt"
	"math/rand/v2"
	"regexp"
)

var nameWords = []string{
	"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
	"nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega",
}

var nounWords = []string{
	"anvil", "basalt", "cobalt", "dolomite", "ember", "flint", "garnet", "hematite", "ingot", "jasper",
	"kiln", "lodestone", "magma", "nickel", "onyx", "pyrite", "quartz", "rivet", "slate", "tungsten",
}

// generateName makes a human-readable name like "zeta-22-cobalt-cluster",
// valid under Magnum's cluster name pattern.
func generateName(suffix string) string {
	return fmt.Sprintf("%s-%d-%s-%s", nameWords[rand.IntN(len(nameWords))], rand.IntN(100),
		nounWords[rand.IntN(len(nounWords))], suffix)
}

var clusterNameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]*$`)
