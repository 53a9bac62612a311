package main

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// execMagnetite runs the magnetite command in-process with args, writing to
// stdout and stderr; its error is non-nil exactly when the exit status
// would be non-zero.
func execMagnetite(ctx context.Context, stdout, stderr io.Writer, args ...string) error {
	root := rootCommand()
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// runMagnetite runs the magnetite command with args and returns its
// output (standard output and error together) and error.
func runMagnetite(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := execMagnetite(context.Background(), &out, &out, args...)
	return out.String(), err
}
