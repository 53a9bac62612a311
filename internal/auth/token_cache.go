package auth

import (
	"container/list"
	"sync"
	"time"
)

// cacheEntry is what Keystone said about one token: the identity, or why the
// token was refused (reason set).
type cacheEntry struct {
	id      Identity
	reason  string
	expires time.Time // the token's own expiry (refusals: when to forget them)
	checked time.Time // when Keystone last confirmed it
}

// tokenCache is a bounded least-recently-used map from token digests to
// validation results. Tokens are stored only as SHA-256 digests.
type tokenCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used; values are *cacheItem
	items map[string]*list.Element
}

type cacheItem struct {
	key   string
	entry cacheEntry
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, order: list.New(), items: make(map[string]*list.Element)}
}

func (c *tokenCache) get(key string) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return cacheEntry{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheItem).entry, true
}

func (c *tokenCache) put(key string, e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*cacheItem).entry = e
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, entry: e})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheItem).key)
	}
}

func (c *tokenCache) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.order.Remove(el)
		delete(c.items, key)
	}
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
