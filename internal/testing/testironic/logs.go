package testironic

import (
	"bytes"
	"sync"
)

// BMCPassword is the password bare-metal tests enroll hosts with; it must
// never appear in a response, a host or a log line. It is 16 characters,
// the most ipmi_sim accepts.
const BMCPassword = "Tr0ub4dor-s3cret"

// LogBuffer collects log output written from several goroutines, so a
// test can check that no log line carries a BMC password.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
