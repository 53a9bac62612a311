package addons

import (
	"fmt"
	"strings"
)

// MarkdownTable is the pinned table as docs/addons.md shows it.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| addon | Kubernetes | version | charts (name version) | repository | Kubernetes its project supports |\n|---|---|---|---|---|---|\n")
	for _, p := range Table() {
		var cs []string
		repo := ""
		for _, c := range p.Charts {
			cs = append(cs, "`"+c.Name+"` "+c.Version)
			repo = c.Repo
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.Addon, p.Minor, p.AppVersion, strings.Join(cs, ", "), repo, p.KubeRange)
	}
	return b.String()
}
