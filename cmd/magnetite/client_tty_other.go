//go:build !linux

package main

import "os"

// terminalWidth treats output as plain where terminals are not detected.
func terminalWidth(*os.File) (bool, int) { return false, 0 }
