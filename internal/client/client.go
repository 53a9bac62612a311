package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// DefaultEndpoint is where a local `magnetite serve` listens.
const DefaultEndpoint = "http://127.0.0.1:9511/v1"

// Credentials supply the token sent with each request.
type Credentials interface {
	// Token is the X-Auth-Token to send; "" sends none (noauth).
	Token() string
	// Reauthenticate replaces a token the service refused, or reports
	// that it cannot.
	Reauthenticate(ctx context.Context, refused string) error
}

// StaticToken is a token that cannot be renewed: noauth, or a token issued
// elsewhere.
type StaticToken string

// Token returns the token.
func (t StaticToken) Token() string { return string(t) }

// Reauthenticate always fails: there is nothing to renew the token with.
func (t StaticToken) Reauthenticate(context.Context, string) error {
	return errors.New("client: the token was refused and cannot be renewed")
}

// Client talks to one Magnum v1 endpoint.
type Client struct {
	endpoint string
	creds    Credentials
	http     *http.Client
}

// New returns a client of the v1 API at endpoint ("http://host:9511" or
// ".../v1"); creds nil sends no token.
func New(endpoint string, creds Credentials, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: endpoint %q is not an http(s) URL such as %s", endpoint, DefaultEndpoint)
	}
	base := strings.TrimRight(u.String(), "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	if creds == nil {
		creds = StaticToken("")
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{endpoint: base, creds: creds, http: hc}, nil
}

// Endpoint is the v1 base URL requests go to.
func (c *Client) Endpoint() string { return c.endpoint }

// Error is a refusal from the API: its Magnum error document, or the status
// and body when the answer was not one.
type Error struct {
	Method     string
	URL        string
	StatusCode int
	Title      string
	Detail     string
	RequestID  string
}

func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	ref := fmt.Sprintf("HTTP %d", e.StatusCode)
	if e.RequestID != "" {
		ref += ", request " + e.RequestID
	}
	return fmt.Sprintf("%s (%s)", msg, ref)
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// magnumErrors is Magnum's error document.
type magnumErrors struct {
	Errors []struct {
		RequestID string `json:"request_id"`
		Status    int    `json:"status"`
		Title     string `json:"title"`
		Detail    string `json:"detail"`
	} `json:"errors"`
}

func decodeError(method, rawURL string, resp *http.Response, body []byte) *Error {
	e := &Error{Method: method, URL: rawURL, StatusCode: resp.StatusCode,
		RequestID: resp.Header.Get("X-Openstack-Request-Id")}
	var doc magnumErrors
	if json.Unmarshal(body, &doc) == nil && len(doc.Errors) > 0 {
		first := doc.Errors[0]
		e.Title, e.Detail = first.Title, first.Detail
		if first.RequestID != "" {
			e.RequestID = first.RequestID
		}
		return e
	}
	// Not Magnum's document (a proxy, Keystone middleware): quote the body.
	e.Detail = strings.TrimSpace(string(body))
	if len(e.Detail) > 300 {
		e.Detail = e.Detail[:300] + "…"
	}
	return e
}

// do sends a request to a path under the v1 endpoint ("/clusters") or to
// an absolute URL the API handed out (a "next" link) and decodes a JSON
// answer into out.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	target := path
	if !strings.HasPrefix(path, "http://") && !strings.HasPrefix(path, "https://") {
		target = c.endpoint + path
	}
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	resp, raw, err := c.send(ctx, method, target, body)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		// An expired token: log in again once and repeat the request.
		refused := c.creds.Token()
		if rerr := c.creds.Reauthenticate(ctx, refused); rerr == nil && c.creds.Token() != refused {
			if resp, raw, err = c.send(ctx, method, target, body); err != nil {
				return err
			}
		}
	}
	if resp.StatusCode >= 400 {
		return decodeError(method, target, resp, raw)
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("client: %s %s: decode answer: %w", method, target, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, target string, body []byte) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OpenStack-API-Version", "container-infra latest")
	req.Header.Set("User-Agent", "magnetite-client")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok := c.creds.Token(); tok != "" {
		req.Header.Set("X-Auth-Token", tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("client: %s %s: read answer: %w", method, target, err)
	}
	return resp, raw, nil
}
