package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/magnetite-io/magnetite/internal/store"
)

// Reads are served from the JSON the store keeps: each row's members are
// copied as they are into the wire object, in the order and with the key
// set of the wire type in internal/apitypes, and only what depends on the
// request (links, microversion and policy-dependent fields) or on other rows
// (a cluster's node counts and addresses, labels diffs) is computed. Nothing
// is decoded into a struct and encoded again.

var errBadStoredJSON = errors.New("api: stored object is not a JSON object")

// eachMember calls fn with the key (unquoted; stored keys are plain ASCII)
// and the raw value of each top-level member of the JSON object b.
func eachMember(b []byte, fn func(key, val []byte)) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errBadStoredJSON
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return errBadStoredJSON
		}
		end := skipValue(b, i)
		if end < 0 {
			return errBadStoredJSON
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return errBadStoredJSON
		}
		i = skipSpace(b, i+1)
		end = skipValue(b, i)
		if end < 0 {
			return errBadStoredJSON
		}
		fn(key, b[i:end])
		i = skipSpace(b, end)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return nil
		default:
			return errBadStoredJSON
		}
	}
	return errBadStoredJSON
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i, or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipValue(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// wireShape is the key order and key set of a wire type, with each key's
// value when a stored row lacks it (what decoding the row into the model
// struct and encoding the wire struct used to give).
type wireShape struct {
	keys      []string
	prefix    [][]byte // `"key":`, with a leading comma but for the first
	index     map[string]int
	zero      [][]byte // nil: left out unless set
	transform []func(dst, v []byte) []byte
	rename    map[string]string // stored key -> wire key
}

// newWireShape takes its keys from the JSON encoding of v (a zero wire
// value whose omitempty fields the caller filled so they appear); the keys
// named optional are left out unless set.
func newWireShape(v any, optional ...string) *wireShape {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	sh := &wireShape{index: map[string]int{}}
	err = eachMember(b, func(key, val []byte) {
		k := string(key)
		sh.index[k] = len(sh.keys)
		sh.keys = append(sh.keys, k)
		sh.zero = append(sh.zero, bytes.Clone(val))
	})
	if err != nil {
		panic(err)
	}
	sh.transform = make([]func(dst, v []byte) []byte, len(sh.keys))
	for _, k := range optional {
		sh.zero[sh.index[k]] = nil
	}
	for i, k := range sh.keys {
		p := strconv.Quote(k) + ":"
		if i > 0 {
			p = "," + p
		}
		sh.prefix = append(sh.prefix, []byte(p))
	}
	return sh
}

// with sets how key's stored value is written; keys the shape lacks are
// ignored, so shared transforms can be given to every shape.
func (sh *wireShape) with(fn func(dst, v []byte) []byte, keys ...string) *wireShape {
	for _, k := range keys {
		if i, ok := sh.index[k]; ok {
			sh.transform[i] = fn
		}
	}
	return sh
}

// renamed reads the stored member from under the wire key to.
func (sh *wireShape) renamed(from, to string) *wireShape {
	if sh.rename == nil {
		sh.rename = map[string]string{}
	}
	sh.rename[from] = to
	return sh
}

// wireObject is one object being written in a shape; reuse it row after
// row with load.
type wireObject struct {
	shape *wireShape
	vals  [][]byte
}

func (sh *wireShape) object() *wireObject {
	return &wireObject{shape: sh, vals: make([][]byte, len(sh.keys))}
}

// load takes the stored members of data the shape shows.
func (o *wireObject) load(data []byte) error {
	clear(o.vals)
	sh := o.shape
	return eachMember(data, func(key, val []byte) {
		i, ok := sh.index[string(key)]
		if !ok {
			to, renamed := sh.rename[string(key)]
			if !renamed {
				return
			}
			i = sh.index[to]
		}
		o.vals[i] = val
	})
}

// get is key's stored value, or nil.
func (o *wireObject) get(key string) []byte {
	if i, ok := o.shape.index[key]; ok {
		return o.vals[i]
	}
	return nil
}

// set makes key's value v (JSON), or leaves key out when v is nil and the
// shape has it as optional. Keys the shape lacks are ignored.
func (o *wireObject) set(key string, v []byte) {
	if i, ok := o.shape.index[key]; ok {
		o.vals[i] = v
	}
}

func (o *wireObject) appendTo(dst []byte) []byte {
	sh := o.shape
	dst = append(dst, '{')
	first := true
	for i, v := range o.vals {
		if v == nil {
			if v = sh.zero[i]; v == nil {
				continue
			}
		}
		p := sh.prefix[i]
		if first && p[0] == ',' {
			p = p[1:]
		}
		first = false
		dst = append(dst, p...)
		if t := sh.transform[i]; t != nil {
			dst = t(dst, v)
		} else {
			dst = append(dst, v...)
		}
	}
	return append(dst, '}')
}

// wireTime writes a stored time (Go's RFC 3339 encoding) as the API shows
// times: UTC to the second with a numeric offset, as Magnum does.
func wireTime(dst, v []byte) []byte {
	// The common case, a UTC time: "2006-01-02T15:04:05[.frac]Z".
	if len(v) >= 22 && v[0] == '"' && v[len(v)-2] == 'Z' && v[len(v)-1] == '"' && (len(v) == 22 || v[20] == '.') {
		dst = append(dst, v[:20]...)
		return append(dst, `+00:00"`...)
	}
	var t time.Time
	if string(v) == "null" || json.Unmarshal(v, &t) != nil {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	dst = append(dst, timeString(t)...)
	return append(dst, '"')
}

// emptyObjectIfNull writes a stored null map as {} (maps the API always
// shows as objects).
func emptyObjectIfNull(dst, v []byte) []byte {
	if string(v) == "null" {
		return append(dst, "{}"...)
	}
	return append(dst, v...)
}

// emptyArrayIfNull writes a stored null list as [].
func emptyArrayIfNull(dst, v []byte) []byte {
	if string(v) == "null" {
		return append(dst, "[]"...)
	}
	return append(dst, v...)
}

// appendLinks writes Magnum's self and bookmark links of coll/id (under
// /v1/ and /); base is baseURL already JSON-escaped (jsonText).
func appendLinks(dst []byte, base, coll, id string) []byte {
	for i, rel := range []string{`","rel":"self"}`, `","rel":"bookmark"}`} {
		if i == 0 {
			dst = append(dst, `[{"href":"`...)
		} else {
			dst = append(dst, `,{"href":"`...)
		}
		dst = append(dst, base...)
		if i == 0 {
			dst = append(dst, "/v1"...)
		}
		dst = append(dst, '/')
		dst = append(dst, coll...)
		dst = append(dst, '/')
		dst = append(dst, id...)
		dst = append(dst, rel...)
	}
	return append(dst, ']')
}

// jsonText is s as the inside of a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// jsonString is the string a stored JSON string value holds ("" for null).
func jsonString(v []byte) string {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// appendPage writes {"<collection>":[items...],"next":"..."}, each row
// written by item and next left out when empty, as the list types in
// apitypes encode.
func appendPage[T any](dst []byte, collection, next string, rows []T, item func(dst []byte, row T) ([]byte, error)) ([]byte, error) {
	dst = append(dst, `{"`...)
	dst = append(dst, collection...)
	dst = append(dst, `":[`...)
	var err error
	for i, row := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = item(dst, row); err != nil {
			return nil, err
		}
	}
	dst = append(dst, ']')
	if next != "" {
		dst = append(dst, `,"next":"`...)
		dst = append(dst, jsonText(next)...)
		dst = append(dst, '"')
	}
	return append(dst, '}'), nil
}

// appendCollectionPage writes a page of cluster templates or clusters as
// collection (or its /detail) lists them, with the next link when the page
// is full.
func appendCollectionPage(dst []byte, r *http.Request, collection string, detail bool, p listParams, rows []store.StoredRow, item func(dst []byte, row store.StoredRow) ([]byte, error)) ([]byte, error) {
	path := collection
	if detail {
		path += "/detail"
	}
	next := ""
	if len(rows) > 0 {
		next = nextLink(r, path, p, len(rows), rows[len(rows)-1].UUID)
	}
	return appendPage(dst, collection, next, rows, item)
}

// bodyPool holds response buffers: a response is built in one and written
// once, with its Content-Length.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledBody keeps an unusually large page's buffer out of the pool.
const maxPooledBody = 4 << 20

// writeBuilt builds a JSON body with build into a pooled buffer and writes
// it with its length.
func writeBuilt(w http.ResponseWriter, status int, build func(dst []byte) ([]byte, error)) error {
	bp := bodyPool.Get().(*[]byte)
	body, err := build((*bp)[:0])
	if err != nil {
		bodyPool.Put(bp)
		return err
	}
	writeBody(w, status, body)
	if cap(body) <= maxPooledBody {
		*bp = body[:0]
		bodyPool.Put(bp)
	}
	return nil
}

// writeBody writes an encoded JSON body in one write.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}
