package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/magnetite-io/magnetite/internal/config"
)

// ConfigLoaded reports the configuration: which files and drop-ins were
// read, in order, or why loading failed. dropInDir is the drop-in directory
// in use ("" when there is none); files in it that do not end in .conf are
// never read, which is the classic way a drop-in silently does nothing.
func ConfigLoaded(cfg *config.Config, loadErr error, dropInDir string) []Result {
	const check = "config"
	if loadErr != nil {
		return []Result{fail(check, "correct the file and line named above; `magnetite config show` lists every option",
			"%v", loadErr)}
	}
	var out []Result
	if len(cfg.Files) == 0 {
		out = append(out, warn(check, "write /etc/magnetite/magnetite.conf (or pass --config-file); `magnetite config show` prints every option",
			"no configuration file read; built-in defaults apply"))
	} else {
		var main, drops []string
		for _, f := range cfg.Files {
			if dropInDir != "" && filepath.Dir(f) == filepath.Clean(dropInDir) {
				drops = append(drops, filepath.Base(f))
			} else {
				main = append(main, f)
			}
		}
		detail := "read " + strings.Join(main, ", ")
		if len(main) == 0 {
			detail = "read no main file"
		}
		switch {
		case dropInDir == "":
			detail += "; no drop-in directory"
		case len(drops) == 0:
			detail += fmt.Sprintf("; drop-in directory %s has no *.conf file", dropInDir)
		default:
			detail += fmt.Sprintf("; drop-ins from %s: %s", dropInDir, strings.Join(drops, ", "))
		}
		out = append(out, pass(check, "%s", detail))
	}
	if dropInDir != "" {
		if ignored := ignoredDropIns(dropInDir); len(ignored) > 0 {
			out = append(out, warn("config drop-ins", "rename them to end in .conf, or remove them",
				"%s holds files that are never read (only *.conf files are): %s", dropInDir, listSome(ignored, 8)))
		}
	}
	return out
}

// ignoredDropIns lists the regular files of dir that Load skips, leaving out
// editor backups and hidden files nobody meant to be read.
func ignoredDropIns(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasSuffix(n, ".conf") || strings.HasPrefix(n, ".") || strings.HasSuffix(n, "~") {
			continue
		}
		out = append(out, n)
	}
	return out
}

// listSome joins at most n names and counts the rest.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
