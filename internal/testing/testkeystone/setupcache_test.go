package testkeystone

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestKeystonesStartFromTheKeptSetupWithKeysOfTheirOwn: once a Keystone
// was set up on this machine, the next starts from the kept database with
// fernet and credential keys of its own, serves its admin, and refuses the
// first one's tokens.
func TestKeystonesStartFromTheKeptSetupWithKeysOfTheirOwn(t *testing.T) {
	first := Start(t)
	if setupCacheKey() == "" {
		t.Skip("Keystone's release cannot be told from its installed package, so no setup is kept; runs where Debian's keystone package is installed")
	}
	if _, err := os.Stat(filepath.Join(setupCacheDir, setupCacheKey()+".db")); err != nil {
		t.Fatalf("no setup kept after a Keystone started: %v", err)
	}
	second := Start(t)
	for _, repo := range []string{"fernet", "credential"} {
		for _, key := range []string{"0", "1"} {
			a, err1 := os.ReadFile(filepath.Join(first.dir, repo, key))
			b, err2 := os.ReadFile(filepath.Join(second.dir, repo, key))
			if err1 != nil || err2 != nil {
				t.Fatalf("%s key %s: %v, %v", repo, key, err1, err2)
			}
			if !isFernetKey(string(b)) {
				t.Errorf("%s key %s of the second Keystone is not a Fernet key: %q", repo, key, b)
			}
			if string(a) == string(b) {
				t.Errorf("both Keystones have the same %s key %s", repo, key)
			}
		}
	}
	// Each validates its own admin token and not the other's.
	validate := func(k *Keystone, subject string) int {
		req, err := http.NewRequest("GET", k.AuthURL()+"/auth/tokens", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Token", k.AdminToken())
		req.Header.Set("X-Subject-Token", subject)
		res, err := k.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := validate(second, second.AdminToken()); got != http.StatusOK {
		t.Errorf("the second Keystone answers %d validating its own admin token, want 200", got)
	}
	if got := validate(second, first.AdminToken()); got != http.StatusNotFound && got != http.StatusUnauthorized {
		t.Errorf("the second Keystone answers %d validating the first's token, want it refused (404)", got)
	}
}
