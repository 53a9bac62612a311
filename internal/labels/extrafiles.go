package labels

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// File is one entry of the extra_files label, written on every node by the
// bootstrap provider. Field names follow Cluster API's kubeadm files.
type File struct {
	Path        string `json:"path"`
	Content     string `json:"content"`
	Encoding    string `json:"encoding,omitempty"`
	Permissions string `json:"permissions,omitempty"`
	Owner       string `json:"owner,omitempty"`
}

// MaxExtraFiles bounds the number of files one label may carry.
const MaxExtraFiles = 100

var (
	permissionsRE = regexp.MustCompile(`^0?[0-7]{3}$`)
	ownerRE       = regexp.MustCompile(`^[a-z_][a-z0-9_-]*(:[a-z_][a-z0-9_-]*)?$`)
	base64Chars   = regexp.MustCompile(`^[A-Za-z0-9+/]+={0,2}$`)
)

// DecodeExtraFiles reads the extra_files label. The value is a list of files
// as YAML or JSON, either as-is or base64-encoded as a whole; a mapping of
// path to content (or to a file object) is accepted too. Each file's
// content is plain text unless its encoding says base64 or gzip+base64.
// Content that is itself base64 but carries no encoding is refused: written
// as-is it would land on the node as a base64 string, the trap that breaks
// any script that later runs it.
func DecodeExtraFiles(value string) ([]File, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var doc []byte
	if compact := stripSpace(value); base64Chars.MatchString(compact) {
		if dec, err := base64.StdEncoding.DecodeString(compact); err == nil {
			doc = dec
		}
	}
	var files []File
	var err error
	if doc != nil {
		files, err = parseFileList(doc)
		if err != nil {
			return nil, fmt.Errorf("the value is base64 but its decoded text is not a file list: %v", err)
		}
	} else {
		files, err = parseFileList([]byte(value))
		if err != nil {
			return nil, fmt.Errorf("the value is neither a YAML/JSON file list nor base64 of one: %v", err)
		}
	}
	if len(files) > MaxExtraFiles {
		return nil, fmt.Errorf("%d files given; at most %d are allowed", len(files), MaxExtraFiles)
	}
	seen := map[string]bool{}
	for i := range files {
		if err := normalizeFile(&files[i]); err != nil {
			return nil, fmt.Errorf("file %d (%s): %v", i+1, files[i].Path, err)
		}
		if seen[files[i].Path] {
			return nil, fmt.Errorf("file %d: path %s is listed twice", i+1, files[i].Path)
		}
		seen[files[i].Path] = true
	}
	return files, nil
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// parseFileList accepts a list of file objects, or a mapping whose keys are
// paths and whose values are the content or a file object without path.
func parseFileList(doc []byte) ([]File, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	switch {
	case bytes.HasPrefix(js, []byte("[")):
		var raw []json.RawMessage
		if err := json.Unmarshal(js, &raw); err != nil {
			return nil, err
		}
		files := make([]File, 0, len(raw))
		for i, r := range raw {
			f, err := decodeFile(r)
			if err != nil {
				return nil, fmt.Errorf("item %d: %v", i+1, err)
			}
			files = append(files, f)
		}
		return files, nil
	case bytes.HasPrefix(js, []byte("{")):
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(js, &raw); err != nil {
			return nil, err
		}
		paths := make([]string, 0, len(raw))
		for p := range raw {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		files := make([]File, 0, len(raw))
		for _, p := range paths {
			var content string
			if err := json.Unmarshal(raw[p], &content); err == nil {
				files = append(files, File{Path: p, Content: content})
				continue
			}
			f, err := decodeFile(raw[p])
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			if f.Path != "" && f.Path != p {
				return nil, fmt.Errorf("%s: the entry names a different path %s", p, f.Path)
			}
			f.Path = p
			files = append(files, f)
		}
		return files, nil
	}
	return nil, errors.New("expected a list of files or a mapping of path to content")
}

func decodeFile(r json.RawMessage) (File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(r))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, fmt.Errorf("expected an object with path, content and optional encoding, permissions, owner: %v", err)
	}
	return f, nil
}

func normalizeFile(f *File) error {
	if f.Path == "" {
		return errors.New("path is missing")
	}
	if !strings.HasPrefix(f.Path, "/") || path.Clean(f.Path) != f.Path || len(f.Path) > 4096 {
		return errors.New("path must be absolute and clean, such as /etc/example.conf")
	}
	if f.Content == "" {
		return errors.New("content is empty")
	}
	switch f.Encoding {
	case "":
		if looksBase64Text(f.Content) {
			return errors.New("content is already base64-encoded but the file has no `encoding: base64`; " +
				"add `encoding: base64` to have it decoded on the node, or give the plain text")
		}
	case "base64", "gzip+base64":
		if _, err := base64.StdEncoding.DecodeString(stripSpace(f.Content)); err != nil {
			return fmt.Errorf("encoding is %s but content is not valid base64", f.Encoding)
		}
		f.Content = stripSpace(f.Content)
	default:
		return fmt.Errorf("encoding %q is not supported; use base64 or gzip+base64, or omit it for plain text", f.Encoding)
	}
	if f.Permissions != "" && !permissionsRE.MatchString(f.Permissions) {
		return fmt.Errorf("permissions %q must be octal such as 0644", f.Permissions)
	}
	if f.Owner != "" && !ownerRE.MatchString(f.Owner) {
		return fmt.Errorf("owner %q must be user or user:group", f.Owner)
	}
	return nil
}

// looksBase64Text reports content that is canonical base64 (at least 16
// characters, padded to a multiple of 4) whose decoded bytes are readable
// text: what a user who pre-encoded a script sends. Plain words, short
// strings and multi-line scripts do not match.
func looksBase64Text(s string) bool {
	compact := stripSpace(s)
	if len(compact) < 16 || len(compact)%4 != 0 || !base64Chars.MatchString(compact) {
		return false
	}
	if strings.ContainsAny(strings.TrimSpace(s), " \t") {
		return false
	}
	dec, err := base64.StdEncoding.DecodeString(compact)
	if err != nil || !utf8.Valid(dec) {
		return false
	}
	for _, r := range string(dec) {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}
