package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// sealedPrefix marks a value sealed with the database's secret key.
const sealedPrefix = "magnetite-sealed:v1:"

// ErrSealed means a secret in the database cannot be read: it is sealed and
// no key, or another key, is configured.
var ErrSealed = errors.New("store: sealed secret")

// SealSecrets makes the store seal the secrets it keeps (the private keys
// of clusters' certificate authorities and the secrets of their
// application credentials) with AES-256-GCM under key, which must be 32
// bytes. Each value is bound to its row, so sealed values cannot be swapped
// between rows. Values written before stay readable; SealExisting seals
// them.
func (s *DB) SealSecrets(key []byte) error {
	if len(key) != 32 {
		return fmt.Errorf("store: the secret key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return err
	}
	s.aead = aead
	return nil
}

// seal returns plain sealed for the row named by aad, or plain itself when
// no key is configured.
func (s *DB) seal(plain, aad string) (string, error) {
	if s.aead == nil {
		return plain, nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, []byte(plain), []byte(aad))
	return sealedPrefix + base64.StdEncoding.EncodeToString(out), nil
}

// open reverses seal; values that were never sealed are returned as they
// are.
func (s *DB) open(stored, aad string) (string, error) {
	enc, sealed := strings.CutPrefix(stored, sealedPrefix)
	if !sealed {
		return stored, nil
	}
	if s.aead == nil {
		return "", fault.New(ErrSealed, "the database holds sealed secrets and no key is configured; set [database] secret_key to the key they were sealed with")
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return "", fault.New(ErrSealed, "a sealed value of %s is damaged", aad)
	}
	plain, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(aad))
	if err != nil {
		return "", fault.New(ErrSealed, "the secret of %s cannot be opened with [database] secret_key (another key sealed it)", aad)
	}
	return string(plain), nil
}

func certificateAAD(clusterID, purpose string) string {
	return "cluster_certificates/" + clusterID + "/" + purpose
}

func credentialAAD(id string) string { return "cluster_credentials/" + id }

// SealExisting seals the secrets written while no key was configured and
// returns how many it sealed. It needs SealSecrets first.
func (s *DB) SealExisting(ctx context.Context) (int, error) {
	if s.aead == nil {
		return 0, errors.New("store: no secret key configured")
	}
	n := 0
	err := s.retryTx(ctx, func(tx *sql.Tx) error {
		n = 0
		type row struct{ a, b, value string }
		unsealed := func(query string) ([]row, error) {
			rows, err := tx.QueryContext(ctx, query)
			all, err := collect(rows, err, func(sc scanner) (row, error) {
				var r row
				err := sc.Scan(&r.a, &r.b, &r.value)
				return r, err
			})
			return slices.DeleteFunc(all, func(r row) bool { return strings.HasPrefix(r.value, sealedPrefix) }), err
		}
		certs, err := unsealed(`SELECT cluster_id, purpose, key_pem FROM cluster_certificates`)
		if err != nil {
			return err
		}
		for _, r := range certs {
			v, err := s.seal(r.value, certificateAAD(r.a, r.b))
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE cluster_certificates SET key_pem = ? WHERE cluster_id = ? AND purpose = ?`, v, r.a, r.b); err != nil {
				return err
			}
			n++
		}
		creds, err := unsealed(`SELECT credential_id, cluster_id, secret FROM cluster_credentials`)
		if err != nil {
			return err
		}
		for _, r := range creds {
			v, err := s.seal(r.value, credentialAAD(r.a))
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE cluster_credentials SET secret = ? WHERE credential_id = ?`, v, r.a); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// UnsealedSecrets counts the secrets the database holds as they are (not
// sealed with a secret key).
func (s *DB) UnsealedSecrets(ctx context.Context) (int, error) {
	n := 0
	for _, q := range []string{`SELECT COUNT(*) FROM cluster_certificates WHERE key_pem NOT LIKE ?`,
		`SELECT COUNT(*) FROM cluster_credentials WHERE secret NOT LIKE ?`} {
		var c int
		if err := s.db.QueryRowContext(ctx, q, sealedPrefix+"%").Scan(&c); err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}
