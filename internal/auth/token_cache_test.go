package auth

import (
	"fmt"
	"testing"
)

func TestTokenCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	c := newTokenCache(3)
	for i := range 3 {
		c.put(fmt.Sprint(i), cacheEntry{reason: fmt.Sprint(i)})
	}
	if _, ok := c.get("0"); !ok { // 0 is now the most recently used
		t.Fatal("0 missing")
	}
	c.put("3", cacheEntry{}) // evicts 1
	if _, ok := c.get("1"); ok {
		t.Fatal("1 should have been evicted as the least recently used")
	}
	for _, k := range []string{"0", "2", "3"} {
		if _, ok := c.get(k); !ok {
			t.Fatalf("%s evicted", k)
		}
	}
	c.put("2", cacheEntry{reason: "updated"})
	if e, _ := c.get("2"); e.reason != "updated" || c.len() != 3 {
		t.Fatalf("update in place: %+v, len %d", e, c.len())
	}
	c.remove("2")
	if _, ok := c.get("2"); ok || c.len() != 2 {
		t.Fatal("remove")
	}
}
