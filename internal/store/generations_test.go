package store_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/magnetite-io/magnetite/internal/store"
)

// generationsWriterEnv makes the test binary the other process of
// TestListGenerationsSeeAnotherProcessCommit: it opens the SQLite file the
// variable names and creates one template per line read from stdin,
// answering "committed" once the create returned.
const generationsWriterEnv = "MAGNETITE_TEST_GENERATIONS_WRITER"

// TestListGenerationsSeeAnotherProcessCommit writes through a second
// process on one SQLite file: every read of the list generations after the
// other process's commit returned shows it, although this process's store
// keeps the generations it last read while the file's data version stands.
func TestListGenerationsSeeAnotherProcessCommit(t *testing.T) {
	if path := os.Getenv(generationsWriterEnv); path != "" {
		writeTemplatesOnRequest(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "magnetite.db")
	db := mustOpen(t, func() (*store.DB, error) { return store.OpenSQLite(ctx, path) })

	writer := exec.Command(os.Args[0], "-test.run=^TestListGenerationsSeeAnotherProcessCommit$")
	writer.Env = append(os.Environ(), generationsWriterEnv+"="+path)
	writer.Stderr = os.Stderr
	requests, err := writer.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := writer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		requests.Close()
		writer.Wait()
	})
	answers := bufio.NewScanner(out)

	read := func() store.Generations {
		t.Helper()
		g, err := db.ListGenerations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for i := range 20 {
		before := read()
		if again := read(); again != before {
			t.Fatalf("generations moved from %+v to %+v with no write", before, again)
		}
		fmt.Fprintf(requests, "t-%d\n", i)
		if !answers.Scan() || answers.Text() != "committed" {
			t.Fatalf("the writer process answered %q (%v)", answers.Text(), answers.Err())
		}
		if after := read(); after.Templates <= before.Templates {
			t.Fatalf("write %d: generations %+v after the other process committed, %+v before", i, after, before)
		}
	}
}

func writeTemplatesOnRequest(t *testing.T, path string) {
	db := mustOpen(t, func() (*store.DB, error) { return store.OpenSQLite(ctx, path) })
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		createTemplate(t, db, template("p1", in.Text(), false, false))
		if _, err := io.WriteString(os.Stdout, "committed\n"); err != nil {
			t.Fatal(err)
		}
	}
}
