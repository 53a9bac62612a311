package labels

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxKeyLength and MaxValueLength bound a single label.
const (
	MaxKeyLength   = 255
	MaxValueLength = 65535
)

// ParseValue decodes labels as clients send them: a JSON object whose values
// are strings, numbers or booleans, or a string holding such an object in
// JSON or as a Python dict literal (what `openstack coe ... update labels=`
// and Magnum's own PATCH handling produce). Values are returned as strings,
// which is how Magnetite stores and returns them.
func ParseValue(v any) (map[string]string, error) {
	switch t := v.(type) {
	case nil:
		return map[string]string{}, nil
	case map[string]any:
		return fromMap(t)
	case map[string]string:
		out := make(map[string]string, len(t))
		for k, x := range t {
			if err := checkPair(k, x); err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case string:
		s := strings.TrimSpace(t)
		if s == "" {
			return map[string]string{}, nil
		}
		if !strings.HasPrefix(s, "{") {
			return nil, fmt.Errorf("labels must be an object such as {\"kube_tag\": \"v1.30.4\"}")
		}
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err == nil && atEOF(dec) {
			return fromMap(m)
		}
		m, err := parsePythonDict(s)
		if err != nil {
			return nil, fmt.Errorf("labels string is neither a JSON object nor a dict literal: %v", err)
		}
		return fromMap(m)
	}
	return nil, fmt.Errorf("labels must be an object of key/value pairs")
}

// atEOF reports whether only whitespace follows the decoded value.
func atEOF(dec *json.Decoder) bool {
	_, err := dec.Token()
	return err == io.EOF
}

func fromMap(m map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, err := scalarString(x)
		if err != nil {
			return nil, fmt.Errorf("label %q: %v", k, err)
		}
		if err := checkPair(k, s); err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func checkPair(k, v string) error {
	if k == "" {
		return fmt.Errorf("label keys must not be empty")
	}
	if len(k) > MaxKeyLength {
		return fmt.Errorf("label key %q is longer than %d characters", k[:32]+"...", MaxKeyLength)
	}
	if !utf8.ValidString(k) || !utf8.ValidString(v) {
		return fmt.Errorf("label %q must be valid UTF-8", k)
	}
	if len(v) > MaxValueLength {
		return fmt.Errorf("label %q value is longer than %d bytes", k, MaxValueLength)
	}
	return nil
}

func scalarString(x any) (string, error) {
	switch t := x.(type) {
	case string:
		return t, nil
	case json.Number:
		return t.String(), nil
	case bool:
		return strconv.FormatBool(t), nil
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), nil
	case nil:
		return "", fmt.Errorf("value must not be null")
	}
	return "", fmt.Errorf("value must be a string, number or boolean")
}

// parsePythonDict reads a flat dict literal: {'k': 'v', "n": 1, 'b': True}.
func parsePythonDict(s string) (map[string]any, error) {
	p := &pyParser{s: s}
	p.skipSpace()
	if !p.consume('{') {
		return nil, fmt.Errorf("expected '{'")
	}
	out := map[string]any{}
	p.skipSpace()
	if p.consume('}') {
		return out, p.end()
	}
	for {
		p.skipSpace()
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if !p.consume(':') {
			return nil, fmt.Errorf("expected ':' after key %q", k)
		}
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out[k] = v
		p.skipSpace()
		if p.consume(',') {
			p.skipSpace()
			if p.consume('}') {
				return out, p.end()
			}
			continue
		}
		if p.consume('}') {
			return out, p.end()
		}
		return nil, fmt.Errorf("expected ',' or '}' at offset %d", p.i)
	}
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) skipSpace() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *pyParser) consume(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) end() error {
	p.skipSpace()
	if p.i != len(p.s) {
		return fmt.Errorf("unexpected text after the closing '}'")
	}
	return nil
}

func (p *pyParser) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", fmt.Errorf("expected a quoted string at offset %d", p.i)
	}
	q := p.s[p.i]
	p.i++
	var b bytes.Buffer
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			switch e := p.s[p.i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		case c == q:
			p.i++
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
		p.i++
	}
	return "", fmt.Errorf("unterminated string")
}

func (p *pyParser) value() (any, error) {
	if p.i < len(p.s) && (p.s[p.i] == '\'' || p.s[p.i] == '"') {
		return p.str()
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune(",} \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
	tok := p.s[start:p.i]
	switch tok {
	case "True":
		return true, nil
	case "False":
		return false, nil
	case "":
		return nil, fmt.Errorf("expected a value at offset %d", start)
	}
	if _, err := strconv.ParseFloat(tok, 64); err == nil {
		return json.Number(tok), nil
	}
	return nil, fmt.Errorf("unsupported value %q (use a quoted string, a number, True or False)", tok)
}
