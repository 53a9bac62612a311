package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNoMergeOfConcurrentWritesIsLeft: concurrent writers of a cluster
// are kept apart by resource versions, never reconciled field by field.
// Nothing in the product's code merges a writer's object into a row that
// changed since it was read, or carries the bytes it read for that.
func TestNoMergeOfConcurrentWritesIsLeft(t *testing.T) {
	merge := regexp.MustCompile(`mergeSince|sinceRead|refreshCluster|refreshNodeGroup|three-way|\bStored\s+\[\]byte|\.Stored\b`)
	root := filepath.Join("..", "..")
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name != "." && name != ".." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if merge.MatchString(line) {
				found = append(found, path+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("merge code is back:\n%s", strings.Join(found, "\n"))
	}
}
