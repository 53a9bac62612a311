package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// requireJSON refuses a write whose body is not declared JSON: Magnum's
// clients all send application/json (or a +json type for JSON patches),
// and a browser can post a form or text/plain across sites without asking
// first, which a noauth server would otherwise accept.
func requireJSON(r *http.Request) *apiError {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return nil
	}
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return nil // no body: the handler says what it misses
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return nil
	}
	got := r.Header.Get("Content-Type")
	if got == "" {
		got = "none"
	}
	return &apiError{Status: http.StatusUnsupportedMediaType, Title: "Unsupported Media Type",
		Detail: fmt.Sprintf("The request body must be JSON: send Content-Type: application/json (got %s).", got)}
}

// duplicateKey finds a key that appears twice in one JSON object of body,
// at any depth: decoders keep one of the two values silently, and which one
// a proxy, a client and the server each keep need not agree. Bodies that
// are not valid JSON are left to the decoder, whose message says more.
func duplicateKey(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].key = true
				}
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return k, true
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// cleanPath reports whether p is the form the router matches: no empty,
// "." or ".." segments. Others would be answered by an HTML redirect.
func cleanPath(p string) bool {
	if strings.Contains(p, "//") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
