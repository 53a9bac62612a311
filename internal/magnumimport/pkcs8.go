package magnumimport

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
)

// Magnum writes a cluster CA's private key as PKCS #8 PEM, encrypted with
// the passphrase it stores beside it (python-cryptography's
// BestAvailableEncryption, magnum/common/x509/operations.py), which is
// PBES2: PBKDF2 then a block cipher in CBC mode (RFC 8018 §6.2, appendix
// A.2 and B.2). Go's standard library reads no encrypted PKCS #8, and
// these are the few algorithms OpenSSL and cryptography choose.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

var pbkdf2PRFs = map[string]func() hash.Hash{
	"1.2.840.113549.2.7":  sha1.New,
	"1.2.840.113549.2.8":  sha256.New224,
	"1.2.840.113549.2.9":  sha256.New,
	"1.2.840.113549.2.10": sha512.New384,
	"1.2.840.113549.2.11": sha512.New,
}

var aesCBCKeySizes = map[string]int{
	"2.16.840.1.101.3.4.1.2":  16,
	"2.16.840.1.101.3.4.1.22": 24,
	"2.16.840.1.101.3.4.1.42": 32,
}

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxIterations bounds the work a damaged row can ask for; OpenSSL writes
// 2048, python-cryptography up to a few hundred thousand.
const maxIterations = 10_000_000

var errWrongPassphrase = errors.New("the passphrase Magnum stored does not open the key")

// decryptPrivateKey reads a PEM private key as Magnum stores it (encrypted
// PKCS #8 with passphrase, or unencrypted when Magnum stored none) and
// returns it as PKCS #8 DER.
func decryptPrivateKey(keyPEM []byte, passphrase string) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("the private key is not PEM")
	}
	switch block.Type {
	case "ENCRYPTED PRIVATE KEY":
	case "PRIVATE KEY":
		return block.Bytes, nil
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		return x509.MarshalPKCS8PrivateKey(k)
	default:
		return nil, fmt.Errorf("the private key is a PEM %q block, not PKCS #8", block.Type)
	}
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(block.Bytes, &info); err != nil {
		return nil, fmt.Errorf("read the encrypted key: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("the key is encrypted with %s, not PBES2", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("read the key's PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("the key's password derivation is %s, not PBKDF2", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("read the key's PBKDF2 parameters: %w", err)
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxIterations {
		return nil, fmt.Errorf("the key's PBKDF2 iteration count %d is out of range", kdf.Iterations)
	}
	prf := sha1.New // RFC 8018 A.2: hmacWithSHA1 is the default
	if len(kdf.PRF.Algorithm) > 0 {
		var ok bool
		if prf, ok = pbkdf2PRFs[kdf.PRF.Algorithm.String()]; !ok {
			return nil, fmt.Errorf("the key's PBKDF2 uses %s, which is not read here", kdf.PRF.Algorithm)
		}
	}
	scheme := params.EncryptionScheme.Algorithm
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("read the key cipher's IV: %w", err)
	}
	var newCipher func([]byte) (cipher.Block, error)
	keyLen := 0
	if n, ok := aesCBCKeySizes[scheme.String()]; ok {
		newCipher, keyLen = aes.NewCipher, n
	} else if scheme.Equal(oidDESEDE3CBC) {
		newCipher, keyLen = des.NewTripleDESCipher, 24
	} else {
		return nil, fmt.Errorf("the key is encrypted with %s, which is not read here", scheme)
	}
	key, err := pbkdf2.Key(prf, passphrase, kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	c, err := newCipher(key)
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(iv) != c.BlockSize() || len(data) == 0 || len(data)%c.BlockSize() != 0 {
		return nil, errors.New("the encrypted key's length or IV does not fit its cipher")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(c, iv).CryptBlocks(plain, data)
	// PKCS #5 padding; a wrong passphrase shows as padding that does not
	// check out (or, rarely, as DER that does not parse).
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > c.BlockSize() || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errWrongPassphrase
	}
	plain = plain[:len(plain)-pad]
	if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
		return nil, errWrongPassphrase
	}
	return plain, nil
}
