package testkeystone

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Every test's Keystone starts from the same database: the schema
// `keystone-manage db_sync` builds and what `bootstrap` adds (the admin
// user, project and roles, the region). Made by four Python processes, it
// costs each Keystone about eight seconds of CPU, and a suite run starts a
// couple of dozen Keystones on two cores. The first Keystone of a machine
// makes it as before and keeps a copy; later ones copy it and write their
// own fernet and credential keys, so no Keystone accepts another's tokens.
// The copy is named by Keystone's installed release and everything the
// setup puts in the database, so an upgraded package makes a new one.

// setupCacheDir holds the kept databases.
var setupCacheDir = filepath.Join(os.TempDir(), "magnetite-keystone-setup")

// setupCacheKey names the database the setup would make here, or "" when
// Keystone's release cannot be told (then nothing is kept).
func setupCacheKey() string {
	releases, _ := filepath.Glob("/usr/lib/python3/dist-packages/keystone-*-info")
	if len(releases) != 1 {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", filepath.Base(releases[0]), AdminPassword, Region, passwordHashRounds)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// restoreSetup puts the kept database into dir and writes fresh keys into
// its key repositories; false when none is kept (or it cannot be copied).
func restoreSetup(dir string) bool {
	key := setupCacheKey()
	if key == "" {
		return false
	}
	db, err := os.ReadFile(filepath.Join(setupCacheDir, key+".db"))
	if err != nil {
		return false
	}
	if os.WriteFile(filepath.Join(dir, "keystone.db"), db, 0o600) != nil {
		return false
	}
	for _, repo := range []string{"fernet", "credential"} {
		if writeFernetKeys(filepath.Join(dir, repo)) != nil {
			return false
		}
	}
	return true
}

// keepSetup keeps dir's freshly set-up database for the Keystones that
// follow. Two tests keeping theirs at once each write a whole file and
// rename it into place.
func keepSetup(dir string) {
	key := setupCacheKey()
	if key == "" {
		return
	}
	db, err := os.ReadFile(filepath.Join(dir, "keystone.db"))
	if err != nil || os.MkdirAll(setupCacheDir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(setupCacheDir, key+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(db)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(setupCacheDir, key+".db")) != nil {
		os.Remove(tmp.Name())
	}
}

// writeFernetKeys writes a key repository as `keystone-manage
// fernet_setup` leaves it: a staged key "0" and a primary key "1", each 32
// random bytes in URL-safe base64 (the Fernet key format: a signing and an
// encryption key), readable by their owner only.
func writeFernetKeys(repo string) error {
	if err := os.MkdirAll(repo, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"0", "1"} {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(base64.URLEncoding.EncodeToString(raw)), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// isFernetKey reports whether s is a key in the format Keystone reads.
func isFernetKey(s string) bool {
	raw, err := base64.URLEncoding.DecodeString(strings.TrimSpace(s))
	return err == nil && len(raw) == 32
}
