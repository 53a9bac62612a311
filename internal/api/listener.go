package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/google/uuid"
)

// goErrorHeaders are what Go's HTTP server writes after the status line of
// the answers it sends itself, before any handler runs (a malformed
// request line or header, a NUL byte in a header, headers too large, an
// unknown transfer encoding). A handler's answer always carries a Date
// header first, so it never starts this way.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// MagnumErrors wraps the API's listener so that the answers Go's HTTP
// server sends itself are in Magnum's error format, as every other error
// is: clients parse {"errors": [...]} and show its title.
func MagnumErrors(ln net.Listener) net.Listener { return magnumErrorListener{ln} }

type magnumErrorListener struct{ net.Listener }

func (l magnumErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &magnumErrorConn{Conn: c}, nil
}

type magnumErrorConn struct{ net.Conn }

func (c *magnumErrorConn) Write(b []byte) (int, error) {
	if out, ok := rewriteGoError(b); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// rewriteGoError turns one of Go's own error answers into the same status
// with a Magnum-format body.
func rewriteGoError(b []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(b, []byte(proto)) {
		return nil, false
	}
	i := bytes.Index(b, []byte(goErrorHeaders))
	if i < 0 || bytes.IndexByte(b[:i], '\n') >= 0 {
		return nil, false
	}
	line := string(b[len(proto):i]) // "400 Bad Request: reason"
	code, err := strconv.Atoi(line[:min(3, len(line))])
	if err != nil || code < 400 {
		return nil, false
	}
	detail := line[min(4, len(line)):]
	if detail == "" {
		detail = http.StatusText(code)
	}
	detail += ": the server could not read the request."
	rid := "req-" + uuid.NewString()
	body, _ := json.Marshal(errorBody{Errors: []errorItem{{RequestID: rid, Code: "client", Status: code,
		Title: detail, Detail: detail, Links: []interface{}{}}}})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Openstack-Request-Id: %s\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), rid, body), true
}
