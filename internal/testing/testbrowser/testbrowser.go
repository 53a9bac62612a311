// Package testbrowser drives Debian's headless Chromium for a test through
// chromedriver, speaking the W3C WebDriver protocol over HTTP: open pages,
// find elements, click and type as a user does, run a script in the page,
// take screenshots, and receive downloads into a folder.
//
// The packages come from hack/ci-packages.txt (chromium, chromium-driver).
package testbrowser

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

const (
	chromedriverBin = "/usr/bin/chromedriver"
	// chromiumBin is the browser itself; /usr/bin/chromium is a shell
	// wrapper that reads /etc/chromium.d.
	chromiumBin = "/usr/lib/chromium/chromium"
	// elementKey names an element reference in WebDriver answers.
	elementKey = "element-6066-11e4-a52e-4f735466cecf"
)

// Browser is one WebDriver session of headless Chromium.
type Browser struct {
	t       testing.TB
	base    string // chromedriver's URL
	session string
	client  *http.Client
	// Downloads is the folder files the pages download land in.
	Downloads string
}

// Element is a reference to an element of the current page.
type Element struct {
	b  *Browser
	id string
}

// Start runs chromedriver and opens a session of headless Chromium with a
// fresh profile; both end at cleanup. Under -short it skips the test.
func Start(t testing.TB) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Debian's chromium and chromium-driver; runs in the full suite")
	}
	testproc.Require(t, chromedriverBin, chromiumBin)
	dir := t.TempDir()
	port := testmagnetite.FreePort(t)
	logPath := filepath.Join(dir, "chromedriver.log")
	proc, err := testproc.Start(exec.Command(chromedriverBin, "--port="+strconv.Itoa(port), "--allowed-ips=127.0.0.1", "--log-path="+logPath), "")
	if err != nil {
		t.Fatalf("start chromedriver: %v", err)
	}
	b := &Browser{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port), client: &http.Client{Timeout: 2 * time.Minute},
		Downloads: filepath.Join(dir, "downloads")}
	t.Cleanup(func() {
		if b.session != "" {
			b.call("DELETE", "/session/"+b.session, nil, nil)
		}
		proc.Stop(10 * time.Second)
	})
	if err := os.MkdirAll(b.Downloads, 0o700); err != nil {
		t.Fatal(err)
	}
	b.awaitDriver(proc.Exited(), logPath)

	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromiumBin,
			// As root Chromium needs --no-sandbox; the rest keep it from
			// reaching out to the network or doing background work.
			"args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--disable-dev-shm-usage", "--window-size=1400,1000", "--user-data-dir=" + filepath.Join(dir, "profile")},
			"prefs": map[string]any{
				"download.default_directory":   b.Downloads,
				"download.prompt_for_download": false,
			},
		},
	}}}
	var out struct {
		SessionID string `json:"sessionId"`
	}
	b.call("POST", "/session", caps, &out)
	if out.SessionID == "" {
		t.Fatalf("chromedriver opened no session")
	}
	b.session = out.SessionID
	return b
}

// awaitDriver waits until chromedriver reports ready.
func (b *Browser) awaitDriver(exited <-chan struct{}, logPath string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := b.client.Get(b.base + "/status")
		if err == nil {
			var st struct {
				Value struct{ Ready bool } `json:"value"`
			}
			json.NewDecoder(res.Body).Decode(&st)
			res.Body.Close()
			if st.Value.Ready {
				return
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			b.t.Fatalf("chromedriver exited during start:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("chromedriver did not report ready within 30s")
		}
	}
}

// webdriverError is an error answer of the WebDriver protocol.
type webdriverError struct {
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *webdriverError) Error() string { return e.Code + ": " + e.Message }

// do sends one command and decodes its value into out (when not nil).
func (b *Browser) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, b.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Value webdriverError `json:"value"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Value.Code != "" {
			return &e.Value
		}
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	var v struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("%s %s: %v: %s", method, path, err, raw)
	}
	return json.Unmarshal(v.Value, out)
}

// call is do that fails the test on an error.
func (b *Browser) call(method, path string, body, out any) {
	b.t.Helper()
	if err := b.do(method, path, body, out); err != nil {
		b.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
}

func (b *Browser) sessionPath(p string) string { return "/session/" + b.session + p }

// Open navigates to url and waits for the page to load.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.call("POST", b.sessionPath("/url"), map[string]string{"url": url}, nil)
}

// URL is the current page's address.
func (b *Browser) URL() string {
	b.t.Helper()
	var u string
	b.call("GET", b.sessionPath("/url"), nil, &u)
	return u
}

// Script runs JavaScript in the page (a function body; arguments in
// `arguments`) and decodes what it returns into out (when not nil).
func (b *Browser) Script(out any, script string, args ...any) {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	b.call("POST", b.sessionPath("/execute/sync"), map[string]any{"script": script, "args": args}, out)
}

// Find returns the elements matching a CSS selector now (maybe none).
func (b *Browser) Find(css string) []Element {
	b.t.Helper()
	return b.elements("css selector", css)
}

// XPath returns the elements matching an XPath expression now.
func (b *Browser) XPath(expr string) []Element {
	b.t.Helper()
	return b.elements("xpath", expr)
}

func (b *Browser) elements(using, value string) []Element {
	b.t.Helper()
	var refs []map[string]string
	b.call("POST", b.sessionPath("/elements"), map[string]string{"using": using, "value": value}, &refs)
	els := make([]Element, 0, len(refs))
	for _, r := range refs {
		els = append(els, Element{b: b, id: r[elementKey]})
	}
	return els
}

// Click clicks the element as a user does (scrolled into view, at its
// centre).
func (e Element) Click() {
	e.b.t.Helper()
	e.b.call("POST", e.b.sessionPath("/element/"+e.id+"/click"), map[string]any{}, nil)
}

// Type clears the element and types text into it key by key.
func (e Element) Type(text string) {
	e.b.t.Helper()
	e.b.call("POST", e.b.sessionPath("/element/"+e.id+"/clear"), map[string]any{}, nil)
	e.b.call("POST", e.b.sessionPath("/element/"+e.id+"/value"), map[string]string{"text": text}, nil)
}

// Text is the element's rendered text.
func (e Element) Text() string {
	e.b.t.Helper()
	var s string
	e.b.call("GET", e.b.sessionPath("/element/"+e.id+"/text"), nil, &s)
	return s
}

// Displayed reports whether the element is shown.
func (e Element) Displayed() bool {
	e.b.t.Helper()
	var v bool
	if err := e.b.do("GET", e.b.sessionPath("/element/"+e.id+"/displayed"), nil, &v); err != nil {
		return false // gone from the page since it was found
	}
	return v
}

// Screenshot saves a PNG of the window to path.
func (b *Browser) Screenshot(path string) {
	b.t.Helper()
	var data string
	b.call("GET", b.sessionPath("/screenshot"), nil, &data)
	png, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
