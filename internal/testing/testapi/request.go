package testapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Response is what the server answered one request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Latest is the header that asks for the newest microversion.
func Latest() map[string]string {
	return map[string]string{"OpenStack-API-Version": "container-infra latest"}
}

// Do sends one request to the server: body as it is when a string or
// []byte (none when empty), as JSON otherwise (none when nil), with
// Content-Type application/json when there is one; then each header map in
// order, a later one overriding. It fails the test when the request cannot
// be sent or its answer read.
func (s *Server) Do(t testing.TB, method, path string, body any, header ...map[string]string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		if b != "" {
			rd = strings.NewReader(b)
		}
	case []byte:
		if len(b) > 0 {
			rd = bytes.NewReader(b)
		}
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("%s %s: encode body: %v", method, path, err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range header {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}
