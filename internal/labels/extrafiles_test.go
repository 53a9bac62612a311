package labels

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const script = "#!/bin/sh\necho hello from an extra file\n"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestExtraFilesAcceptsEveryDocumentedForm(t *testing.T) {
	want := []File{{Path: "/usr/local/bin/hello.sh", Content: script, Permissions: "0755"}}
	yamlList := "- path: /usr/local/bin/hello.sh\n  permissions: \"0755\"\n  content: |\n    #!/bin/sh\n    echo hello from an extra file\n"
	jsonList := `[{"path":"/usr/local/bin/hello.sh","permissions":"0755","content":"#!/bin/sh\necho hello from an extra file\n"}]`
	cases := map[string]string{
		"plain YAML":             yamlList,
		"plain JSON":             jsonList,
		"base64 of YAML":         b64(yamlList),
		"base64 of JSON":         b64(jsonList),
		"base64 wrapped at 76":   wrap(b64(yamlList), 76),
		"surrounding whitespace": "\n  " + jsonList + "\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeExtraFiles(in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

func TestExtraFilesMappingOfPathToContent(t *testing.T) {
	got, err := DecodeExtraFiles("/etc/b.conf: b=1\n/etc/a.conf:\n  content: a=1\n  owner: root:root\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []File{{Path: "/etc/a.conf", Content: "a=1", Owner: "root:root"}, {Path: "/etc/b.conf", Content: "b=1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
}

func TestExtraFilesRefusesPreEncodedContentWithoutEncoding(t *testing.T) {
	in := "- path: /usr/local/bin/hello.sh\n  content: " + b64(script) + "\n"
	_, err := DecodeExtraFiles(in)
	if err == nil {
		t.Fatal("pre-encoded content without encoding was accepted")
	}
	for _, want := range []string{"/usr/local/bin/hello.sh", "already base64-encoded", "encoding: base64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should say %q", err, want)
		}
	}
	// The same content with the encoding declared is kept encoded for the
	// bootstrap provider to decode on the node.
	got, err := DecodeExtraFiles(in + "  encoding: base64\n")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Encoding != "base64" || got[0].Content != b64(script) {
		t.Errorf("got %+v", got[0])
	}
}

func TestExtraFilesHeuristicHasNoFalsePositives(t *testing.T) {
	for _, content := range []string{
		"short",
		"abcdefghijklmnop",                   // base64 charset, decodes to binary
		"net.ipv4.ip_forward=1",              // plain setting
		"#!/bin/sh\nset -eu\necho ready\n",   // multi-line script
		"Zm9vYmFy Zm9vYmFy Zm9vYmFy Zm9vYmF", // words with spaces
		"KUBELET_EXTRA_ARGS=--max-pods=250",  // env file
	} {
		in, _ := json.Marshal([]File{{Path: "/etc/x", Content: content}})
		if _, err := DecodeExtraFiles(string(in)); err != nil {
			t.Errorf("%q refused: %v", content, err)
		}
	}
}

func TestExtraFilesRefusesBadEntries(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"not a list":         {"hello", "neither a YAML/JSON file list nor base64"},
		"base64 of garbage":  {b64("{{{not yaml"), "base64 but its decoded text is not a file list"},
		"relative path":      {`[{"path":"etc/x","content":"a"}]`, "path must be absolute"},
		"dot-dot path":       {`[{"path":"/etc/../root/x","content":"a"}]`, "path must be absolute and clean"},
		"missing path":       {`[{"content":"a"}]`, "path is missing"},
		"empty content":      {`[{"path":"/etc/x","content":""}]`, "content is empty"},
		"unknown encoding":   {`[{"path":"/etc/x","content":"a","encoding":"rot13"}]`, `encoding "rot13" is not supported`},
		"bad base64":         {`[{"path":"/etc/x","content":"%%%","encoding":"base64"}]`, "not valid base64"},
		"bad permissions":    {`[{"path":"/etc/x","content":"a","permissions":"rwx"}]`, "must be octal"},
		"bad owner":          {`[{"path":"/etc/x","content":"a","owner":"root;rm"}]`, "user or user:group"},
		"unknown field":      {`[{"path":"/etc/x","content":"a","mode":"0644"}]`, "unknown field"},
		"duplicate path":     {`[{"path":"/etc/x","content":"a"},{"path":"/etc/x","content":"b"}]`, "listed twice"},
		"scalar list":        {`["a"]`, "expected an object"},
		"conflicting mapped": {"/etc/a:\n  path: /etc/b\n  content: x\n", "names a different path"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeExtraFiles(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
