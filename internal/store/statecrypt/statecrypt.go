// Package statecrypt seals Terraform state for the stores that keep it where
// others can read it (a git remote, an S3 bucket): AES-256-GCM under a key
// from the environment, bound to the scope and document it was written for,
// so a sealed state copied elsewhere does not open there. The key itself is
// never stored or printed; a keyed hash names it, so a wrong key is reported
// as such rather than as damage. SPONSON_STATE_KEY_<ENV> seals that
// environment's state and SPONSON_STATE_KEY the others (ForEnvironment), so
// a job given only the preview key cannot decrypt production
// (docs/design.md §9).
package statecrypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Environment variables naming the key and the plaintext opt-in.
const (
	// EnvStateKey holds the 32-byte state key, as 64 hex digits or as
	// base64 (standard or URL alphabet, padded or not).
	EnvStateKey = "SPONSON_STATE_KEY"
	// EnvStatePlaintext set to 1 or true lets a store write state without a
	// key. Unsafe: anyone who can read the store reads the state and every
	// secret in it.
	EnvStatePlaintext = "SPONSON_STATE_PLAINTEXT"
)

// KeySize is the length of the state key: AES-256.
const KeySize = 32

// Magic starts every sealed document; the rest of the header line names the
// key (KeyID, never the key).
const Magic = "sponson-state/1 aes-256-gcm key="

// Hints are a store's words for what to do when a sealed document cannot be
// opened: Key when the key is missing or wrong, Restore when the document is
// damaged.
type Hints struct {
	Key     string
	Restore string
}

// ParseKey decodes a state key: 64 hex digits, or base64 of 32 bytes. The
// error never repeats the value.
func ParseKey(raw, hint string) ([]byte, error) {
	raw = strings.TrimSpace(raw)
	if len(raw) == 2*KeySize {
		if b, err := hex.DecodeString(raw); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(raw); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, errcode.New(errcode.Usage, "%s is not a %d-byte key in hex or base64 (it has %d characters)", EnvStateKey, KeySize, len(raw)).WithHint(hint)
}

// PlaintextAllowed reads the plaintext opt-in; a value other than yes or no
// is a USAGE error, so a typo never silently means either.
func PlaintextAllowed(getenv func(string) string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvStatePlaintext))); v {
	case "", "0", "false", "no":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	default:
		return false, errcode.New(errcode.Usage, "%s=%q: use 1 to allow plaintext state, or leave it unset", EnvStatePlaintext, v)
	}
}

// KeyID names a key without revealing it: a keyed hash, truncated.
func KeyID(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sponson state key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// IsSealed reports whether data starts like a sealed document.
func IsSealed(data []byte) bool { return bytes.HasPrefix(data, []byte(Magic)) }

// Seal encrypts plain with AES-256-GCM under a fresh random nonce. The header
// line and context (which scope, which document) are authenticated.
func Seal(key []byte, context string, plain []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	header := Magic + KeyID(key) + "\n"
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "draw a nonce")
	}
	out := append([]byte(header), nonce...)
	return gcm.Seal(out, nonce, plain, []byte(header+context)), nil
}

// Unseal reverses Seal; what names the document in errors.
func Unseal(key []byte, context, what string, data []byte, h Hints) ([]byte, error) {
	line, body, ok := bytes.Cut(data, []byte("\n"))
	id, magic := strings.CutPrefix(string(line), Magic)
	if !ok || !magic {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s is not a sealed Sponson state (unknown header)", what).WithHint(h.Restore)
	}
	if key == nil {
		return nil, errcode.New(errcode.Usage, "%s is encrypted (key %s) and %s is not set", what, id, EnvStateKey).WithHint(h.Key)
	}
	if id != KeyID(key) {
		return nil, errcode.New(errcode.Usage, "%s was encrypted with key %s, but %s is key %s", what, id, EnvStateKey, KeyID(key)).
			WithHint("Use the key the earlier runs used; the ids are keyed hashes of the keys.")
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(body) < gcm.NonceSize() {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s is truncated", what).WithHint(h.Restore)
	}
	aad := string(line) + "\n" + context
	plain, err := gcm.Open(nil, body[:gcm.NonceSize()], body[gcm.NonceSize():], []byte(aad))
	if err != nil {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s does not decrypt with key %s: it was altered or belongs to another scope", what, id).WithHint(h.Restore)
	}
	return plain, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, errcode.Wrap(errcode.Usage, err, "state key")
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "AES-GCM")
	}
	return gcm, nil
}
