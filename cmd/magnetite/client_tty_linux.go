package main

import (
	"os"
	"syscall"
	"unsafe"
)

// terminalWidth reports whether f is a terminal and how many columns it has.
func terminalWidth(f *os.File) (bool, int) {
	var t syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return false, 0
	}
	var ws struct{ rows, cols, x, y uint16 }
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 || ws.cols == 0 {
		return true, 80
	}
	return true, int(ws.cols)
}
