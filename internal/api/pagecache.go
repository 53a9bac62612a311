package api

import (
	"container/list"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/magnetite-io/magnetite/internal/store"
)

// pageCache keeps encoded list pages, least recently used first out, within
// a byte budget. A page's key holds the database's list generations it was
// read at: once another write commits (through any replica), requests read
// newer generations and never find the old page, which ages out.
type pageCache struct {
	mu      sync.Mutex
	max     int
	size    int
	order   *list.List // of *cachedPage, most recent first
	entries map[string]*list.Element
	// building are the pages being read now: requests for one wait for it
	// instead of each reading and encoding the same page at once (after a
	// write, every client of a busy listing misses together).
	building map[string]*pageBuild
}

// pageBuild is a page one request is reading for others.
type pageBuild struct {
	done chan struct{}
	body []byte // the cached copy; nil when the page was not kept
}

type cachedPage struct {
	key  string
	body []byte
}

func newPageCache(maxBytes int) *pageCache {
	if maxBytes <= 0 {
		return nil
	}
	return &pageCache{max: maxBytes, order: list.New(), entries: map[string]*list.Element{}, building: map[string]*pageBuild{}}
}

func (c *pageCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedPage).body, true
}

// join returns the page being built under key and false, or registers the
// caller as its builder (true), who must call finish.
func (c *pageCache) join(key string) (*pageBuild, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.building[key]; ok {
		return b, false
	}
	b := &pageBuild{done: make(chan struct{})}
	c.building[key] = b
	return b, true
}

// finish releases the build's waiters; the builder set b.body before.
func (c *pageCache) finish(key string, b *pageBuild) {
	c.mu.Lock()
	delete(c.building, key)
	c.mu.Unlock()
	close(b.done)
}

// put keeps a copy of body under key and returns it; a page larger than a
// quarter of the budget is not kept (nil).
func (c *pageCache) put(key string, body []byte) []byte {
	if len(body) > c.max/4 {
		return nil
	}
	p := &cachedPage{key: key, body: append([]byte(nil), body...)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.size -= len(e.Value.(*cachedPage).body)
		c.order.Remove(e)
	}
	c.entries[key] = c.order.PushFront(p)
	c.size += len(p.body)
	for c.size > c.max {
		last := c.order.Back()
		old := last.Value.(*cachedPage)
		c.order.Remove(last)
		delete(c.entries, old.key)
		c.size -= len(old.body)
	}
	return p.body
}

// pageKinds says which list generations a page depends on.
type pageKinds int

const (
	templatePages pageKinds = iota // templates only
	clusterPages                   // clusters and node groups, and templates (labels diffs)
)

// pageKey is everything that changes a page's bytes: the generations of
// what it lists, the caller's view (whose rows it may see), the
// microversion, and the URL (route, query, and the scheme and host the
// links are made of).
func pageKey(r *http.Request, view store.Scope, subject string, g store.Generations, kinds pageKinds) string {
	var b strings.Builder
	b.Grow(160)
	b.WriteString(strconv.FormatInt(g.Templates, 10))
	if kinds == clusterPages {
		b.WriteByte('.')
		b.WriteString(strconv.FormatInt(g.Clusters, 10))
	}
	b.WriteByte(' ')
	b.WriteString(versionOf(r.Context()).String())
	if view.AllProjects {
		b.WriteString(" all ")
	} else {
		b.WriteString(" project ")
		b.WriteString(strconv.Quote(view.ProjectID))
	}
	b.WriteByte(' ')
	b.WriteString(subject)
	b.WriteByte(' ')
	b.WriteString(baseURL(r))
	b.WriteString(r.URL.EscapedPath())
	b.WriteByte('?')
	b.WriteString(r.URL.RawQuery)
	return b.String()
}

// servePage answers a list request with build's page (read and encoded by
// build, which must do every read of the page itself): from the page cache
// when it holds the page at the database's current list generations,
// otherwise built, kept and written once with its length. view is the
// caller's policy view of the rows; subject names what the request resolved
// before (a node group list's cluster UUID).
func (s *Server) servePage(w http.ResponseWriter, r *http.Request, view store.Scope, subject string, kinds pageKinds, build func(dst []byte) ([]byte, error)) error {
	if s.pages == nil {
		return writeBuilt(w, http.StatusOK, build)
	}
	// The generations are read before the page: a page is never older than
	// the generations it is kept under.
	g, err := s.st.ListGenerations(r.Context())
	if err != nil {
		return err
	}
	key := pageKey(r, view, subject, g, kinds)
	if body, ok := s.pages.get(key); ok {
		s.metrics.PageCache(true)
		writeBody(w, http.StatusOK, body)
		return nil
	}
	s.metrics.PageCache(false)
	b, builder := s.pages.join(key)
	if !builder {
		select {
		case <-b.done:
		case <-r.Context().Done():
			return r.Context().Err()
		}
		if b.body != nil {
			writeBody(w, http.StatusOK, b.body)
			return nil
		}
		// Not kept (too large, or the build failed): read it here.
		return writeBuilt(w, http.StatusOK, build)
	}
	defer s.pages.finish(key, b)
	return writeBuilt(w, http.StatusOK, func(dst []byte) ([]byte, error) {
		body, err := build(dst)
		if err == nil {
			// Copied now: the pooled buffer is reused once written.
			b.body = s.pages.put(key, body)
		}
		return body, err
	})
}
