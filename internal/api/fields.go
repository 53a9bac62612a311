package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

type fieldKind int

const (
	kString fieldKind = iota
	kInt
	kBool
	kEnum
	kLabels    // key=value labels: values of any scalar type, returned as strings
	kStringMap // string to string, values must be strings
	kTaints
	kStringList
)

// field describes one writable or read-only attribute of a resource, with
// the validation Magnum applies to it.
type field struct {
	name     string
	kind     fieldKind
	min, max int // string length or integer range; max 0 = unbounded
	pattern  *regexp.Regexp
	patternH string // what the pattern means, for messages
	enum     []string
	readOnly bool
	// minVersion hides and refuses the field below this microversion.
	minVersion int
	// nullable fields accept JSON null as "unset".
	nonNull bool
	// multiline strings may hold line breaks; others refuse every control
	// character (a name with a newline or NUL breaks logs, CLI tables and
	// the objects named after it).
	multiline bool
	// emptyUnset takes "" for "not given", as Magnum's free-text fields
	// (wtypes.text) do: Horizon sends "" for fields its forms leave blank.
	emptyUnset bool
}

type schema struct {
	resource string
	fields   map[string]field
}

func newSchema(resource string, fs ...field) schema {
	m := make(map[string]field, len(fs))
	for _, f := range fs {
		m[f.name] = f
	}
	return schema{resource: resource, fields: m}
}

func str(name string, min, max int) field {
	return field{name: name, kind: kString, min: min, max: max}
}

// optionalText is a free-text field where "" means not given.
func optionalText(name string, max int) field {
	return field{name: name, kind: kString, max: max, emptyUnset: true}
}

// text is a string that may span lines (a PEM document).
func text(name string, min, max int) field {
	return field{name: name, kind: kString, min: min, max: max, multiline: true}
}

// maxNodes bounds every node count: Kubernetes supports clusters of up to
// 5,000 nodes, and no request may ask for more.
const maxNodes = 5000

func integer(name string, min, max int) field {
	return field{name: name, kind: kInt, min: min, max: max}
}
func boolean(name string) field  { return field{name: name, kind: kBool} }
func readOnly(name string) field { return field{name: name, readOnly: true} }

// servedAt reports whether the field exists at microversion v: fields a
// microversion introduced are unknown attributes below it.
func (f field) servedAt(v APIVersion) bool { return v.AtLeast(f.minVersion) }

// requestValues is every create and action handler's opening: read the
// bounded body, decode it as one JSON object, validate each member against
// sch at the request's microversion, and refuse a body without one of the
// mandatory members with Magnum's words.
func requestValues(r *http.Request, sch schema, mandatory ...string) (map[string]any, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	raw, aerr := decodeBody(body)
	if aerr != nil {
		return nil, aerr
	}
	vals, aerr := sch.coerceAll(raw, versionOf(r.Context()), false)
	if aerr != nil {
		return nil, aerr
	}
	if err := requireFields(vals, mandatory...); err != nil {
		return nil, err
	}
	return vals, nil
}

// requireFields refuses values without one of names, as Magnum does.
func requireFields(vals map[string]any, names ...string) *apiError {
	for _, f := range names {
		if vals[f] == nil {
			return badRequest("Invalid input for field/attribute %s. Value: null. Mandatory field missing.", f)
		}
	}
	return nil
}

// decodeBody parses a JSON object body, keeping numbers exact.
func decodeBody(body []byte) (map[string]any, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("The request body is empty; send a JSON object.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, badRequest("The request body is not a valid JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("The request body has data after the JSON object.")
	}
	if m == nil {
		return nil, badRequest("The request body must be a JSON object, not null.")
	}
	return m, nil
}

// coerceAll validates every member of in against the schema and returns the
// normalised values. Unknown members are refused; read-only ones are refused
// unless allowReadOnly (patch documents carry them unchanged).
func (s schema) coerceAll(in map[string]any, v APIVersion, allowReadOnly bool) (map[string]any, *apiError) {
	out := make(map[string]any, len(in))
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := s.fields[k]
		if !ok || !f.servedAt(v) {
			if allowReadOnly {
				out[k] = in[k]
				continue
			}
			if ok {
				return nil, badRequest("Unknown attribute for argument %s: %s needs microversion 1.%d or newer (requested %s).", s.resource, k, f.minVersion, v)
			}
			return nil, badRequest("Unknown attribute for argument %s: %s", s.resource, k)
		}
		if f.readOnly {
			if !allowReadOnly {
				return nil, badRequest("%s is a read-only attribute of %s and can not be set.", k, s.resource)
			}
			out[k] = in[k]
			continue
		}
		val, err := f.coerce(in[k])
		if err != nil {
			return nil, badRequest("Invalid input for field/attribute %s. Value: %s. %s", k, shortValue(in[k]), err.Error())
		}
		out[k] = val
	}
	return out, nil
}

func shortValue(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func (f field) coerce(v any) (any, error) {
	if v == nil {
		if f.nonNull {
			return nil, fmt.Errorf("null is not allowed")
		}
		return nil, nil
	}
	switch f.kind {
	case kString, kEnum:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("expected a string")
		}
		if s == "" && f.emptyUnset {
			return nil, nil
		}
		if f.kind == kEnum {
			if !slices.Contains(f.enum, s) {
				//lint:ignore ST1005 WSME's wording, which Magnum's clients see
				return nil, fmt.Errorf("Value should be one of: %s", strings.Join(f.enum, ", "))
			}
			return s, nil
		}
		if n := len([]rune(s)); n < f.min || (f.max > 0 && n > f.max) {
			return nil, fmt.Errorf("expected a string of %d to %d characters", f.min, f.max)
		}
		if !f.multiline && strings.IndexFunc(s, unicode.IsControl) >= 0 {
			return nil, fmt.Errorf("control characters (line breaks, tabs, NUL) are not allowed")
		}
		if f.pattern != nil && !f.pattern.MatchString(s) {
			return nil, fmt.Errorf("%s", f.patternH)
		}
		return s, nil
	case kInt:
		n, err := toInt(v)
		if err != nil {
			return nil, err
		}
		if n < f.min {
			//lint:ignore ST1005 WSME's wording, which Magnum's clients see
			return nil, fmt.Errorf("Value should be greater or equal to %d", f.min)
		}
		if f.max > 0 && n > f.max {
			//lint:ignore ST1005 WSME's wording, which Magnum's clients see
			return nil, fmt.Errorf("Value should be lower or equal to %d", f.max)
		}
		return n, nil
	case kBool:
		return toBool(v)
	case kLabels:
		return labels.ParseValue(v)
	case kStringMap:
		return toStringMap(v)
	case kTaints:
		return toTaints(v)
	case kStringList:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("expected a list of strings")
		}
		out := make([]string, 0, len(arr))
		for _, x := range arr {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("expected a list of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return v, nil
}

func toInt(v any) (int, error) {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			if i > math.MaxInt32 || i < math.MinInt32 {
				return 0, fmt.Errorf("the number is out of range")
			}
			return int(i), nil
		}
		return 0, fmt.Errorf("unable to convert to int: expected a whole number")
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			return 0, fmt.Errorf("unable to convert to int: expected a whole number")
		}
		if i > math.MaxInt32 || i < math.MinInt32 {
			return 0, fmt.Errorf("the number is out of range")
		}
		return i, nil
	case float64:
		if t != math.Trunc(t) || t > math.MaxInt32 || t < math.MinInt32 {
			return 0, fmt.Errorf("unable to convert to int: expected a whole number")
		}
		return int(t), nil
	case int:
		return t, nil
	}
	return 0, fmt.Errorf("unable to convert to int: expected a whole number")
}

// toBool accepts what oslo's strict bool_from_string accepts.
func toBool(v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case json.Number, string:
		// A JSON number can only spell 1 or 0 of these.
		if b, err := labels.ParseBool(fmt.Sprint(t)); err == nil {
			return b, nil
		}
	}
	//lint:ignore ST1005 Magnum's wording, which its clients see
	return false, fmt.Errorf("Wrong type. Expected a boolean (true or false)")
}

func toStringMap(v any) (map[string]string, error) {
	if s, ok := v.(string); ok {
		parsed, err := labels.ParseValue(s)
		if err != nil {
			return nil, err
		}
		return parsed, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object of string values")
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("the value of %q must be a string", k)
		}
		out[k] = s
	}
	return out, nil
}

var validTaintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

func toTaints(v any) ([]model.Taint, error) {
	if s, ok := v.(string); ok {
		var parsed []any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&parsed); err != nil {
			return nil, fmt.Errorf("node_taints must be a list of {key, value, effect} objects")
		}
		v = parsed
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("node_taints must be a list of {key, value, effect} objects")
	}
	out := make([]model.Taint, 0, len(arr))
	for i, x := range arr {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("node_taints[%d] must be an object with key, effect and optional value", i)
		}
		var t model.Taint
		for k, val := range m {
			s, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("node_taints[%d].%s must be a string", i, k)
			}
			switch k {
			case "key":
				t.Key = s
			case "value":
				t.Value = s
			case "effect":
				t.Effect = s
			default:
				return nil, fmt.Errorf("node_taints[%d] contains unrecognised field(s) %s; allowed fields are effect, key, value", i, k)
			}
		}
		if t.Key == "" {
			return nil, fmt.Errorf("node_taints[%d] is missing the required 'key'", i)
		}
		if !slices.Contains(validTaintEffects, t.Effect) {
			return nil, fmt.Errorf("node_taints[%d] effect must be one of %s", i, strings.Join(validTaintEffects, ", "))
		}
		out = append(out, t)
	}
	return out, nil
}

// into marshals normalised values into a model struct.
func into(values map[string]any, dst any) error {
	b, err := json.Marshal(values)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}
