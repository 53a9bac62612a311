package magnumimport

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDecryptsKeysAsOpenSSLEncryptsThem reads PKCS #8 keys encrypted the
// ways OpenSSL (which python-cryptography's BestAvailableEncryption, and so
// Magnum, relies on) writes them, and refuses a wrong passphrase.
func TestDecryptsKeysAsOpenSSLEncryptsThem(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("needs the openssl command (Debian's openssl package)")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(plain, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	const passphrase = "Hk3cE9x2Qa"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"aes-256-cbc with hmacWithSHA256 (OpenSSL 3's default)", []string{"-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA256"}},
		{"aes-128-cbc with hmacWithSHA1 (OpenSSL 1.1's default PRF)", []string{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"}},
		{"aes-192-cbc with hmacWithSHA512", []string{"-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA512"}},
		{"des-ede3-cbc", []string{"-v2", "des3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"pkcs8", "-topk8", "-in", plain, "-passout", "pass:" + passphrase}, tc.args...)
			encrypted, err := exec.Command(openssl, args...).Output()
			if err != nil {
				t.Fatalf("openssl %v: %v", args, err)
			}
			if !bytes.Contains(encrypted, []byte("ENCRYPTED PRIVATE KEY")) {
				t.Fatalf("openssl wrote no encrypted key: %s", encrypted)
			}
			got, err := decryptPrivateKey(encrypted, passphrase)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, der) {
				t.Error("the decrypted key differs from the key encrypted")
			}
			if _, err := decryptPrivateKey(encrypted, "not-"+passphrase); !errors.Is(err, errWrongPassphrase) {
				t.Errorf("a wrong passphrase gave %v, want errWrongPassphrase", err)
			}
		})
	}
	if got, err := decryptPrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), ""); err != nil || !bytes.Equal(got, der) {
		t.Errorf("an unencrypted key (Magnum stored no passphrase) = %v", err)
	}
}

// FuzzDecryptPrivateKey: whatever a Magnum database row holds, reading it
// returns an error or a key, never a panic.
func FuzzDecryptPrivateKey(f *testing.F) {
	f.Add([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n"), "pw")
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"), "")
	f.Fuzz(func(t *testing.T, keyPEM []byte, passphrase string) {
		_, _ = decryptPrivateKey(keyPEM, passphrase)
		block := &pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: keyPEM}
		_, _ = decryptPrivateKey(pem.EncodeToMemory(block), passphrase)
	})
}
