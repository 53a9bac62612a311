package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/magnetite-io/magnetite/internal/store"
)

// Link is a Magnum resource link.
type Link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
	Type string `json:"type,omitempty"`
}

// baseURL is the application URL clients used to reach us (Magnum's
// pecan.request.application_url), honouring a TLS-terminating proxy.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

func resourceLinks(base, collection, id string) []Link {
	return []Link{
		{Href: base + "/v1/" + collection + "/" + id, Rel: "self"},
		{Href: base + "/" + collection + "/" + id, Rel: "bookmark"},
	}
}

// listParams are the validated pagination query parameters.
type listParams struct {
	store.ListOptions
	requestedLimit bool
}

// listAction is kind's policy rule for its list, or for its detailed list.
func listAction(kind string, detail bool) string {
	if detail {
		return kind + ":detail"
	}
	return kind + ":get_all"
}

// authorizeList asks the policy for a list's action and reads its paging
// parameters.
func (s *Server) authorizeList(r *http.Request, action string) (listParams, error) {
	if err := s.authorize(r, action, nil); err != nil {
		return listParams{}, err
	}
	return s.parseList(r, "id")
}

func (s *Server) parseList(r *http.Request, defaultSort string) (listParams, error) {
	q := r.URL.Query()
	p := listParams{ListOptions: store.ListOptions{Limit: s.opts.MaxLimit, SortKey: defaultSort, SortDir: "asc"}}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return p, badRequest("Invalid input for query parameter limit. Value: %q. Expected a positive whole number.", v)
		}
		if n <= 0 {
			return p, badRequest("Limit must be positive")
		}
		p.Limit = min(n, s.opts.MaxLimit)
		p.requestedLimit = true
	}
	if v := q.Get("sort_dir"); v != "" {
		if v != "asc" && v != "desc" {
			return p, badRequest("Invalid sort direction: %s. Acceptable values are 'asc' or 'desc'", v)
		}
		p.SortDir = v
	}
	if v := q.Get("sort_key"); v != "" {
		p.SortKey = v
	}
	p.Marker = q.Get("marker")
	return p, nil
}

// nextLink is Magnum's "next" URL: present when a full page came back.
func nextLink(r *http.Request, path string, p listParams, n int, lastMarker string) string {
	if n == 0 || n < p.Limit {
		return ""
	}
	args := fmt.Sprintf("?sort_key=%s&sort_dir=%s&limit=%d&marker=%s", url.QueryEscape(p.SortKey),
		url.QueryEscape(p.SortDir), p.Limit, url.QueryEscape(lastMarker))
	if role := r.URL.Query().Get("role"); role != "" {
		args += "&role=" + url.QueryEscape(role)
	}
	return baseURL(r) + "/v1/" + strings.TrimPrefix(path, "/") + args
}

func asMaxBytes(err error, target **http.MaxBytesError) bool {
	return errors.As(err, target)
}
