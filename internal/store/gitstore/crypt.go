package gitstore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Environment variables FromEnv reads.
const (
	// EnvStateKey holds the 32-byte state key, as 64 hex digits or as
	// base64 (standard or URL alphabet, padded or not).
	EnvStateKey = "SPONSON_STATE_KEY"
	// EnvStatePlaintext set to 1 or true lets the store write state without
	// a key. Unsafe: anyone who can read the repository reads the state and
	// every secret in it.
	EnvStatePlaintext = "SPONSON_STATE_PLAINTEXT"
	// EnvBudget is how long a contended or briefly unavailable remote is
	// retried: a Go duration ("90s", "2m") or a number of seconds.
	EnvBudget = "SPONSON_STORE_BUDGET"
)

// KeySize is the length of the state key: AES-256.
const KeySize = 32

// sealedMagic starts every encrypted document; the rest of the header line
// names the key (a keyed hash of it, never the key), so that a wrong key is
// reported as such rather than as damage.
const sealedMagic = "sponson-state/1 aes-256-gcm key="

// keyHint is what to do when the key is missing or wrong.
const keyHint = "Set " + EnvStateKey + " to 32 random bytes as hex or base64 (e.g. `openssl rand -hex 32`), the same key for every run of this repository; " +
	"or, unsafe because anyone who can read the repository reads the state, set " + EnvStatePlaintext + "=1."

// FromEnv returns the options the environment sets: the state key
// (SPONSON_STATE_KEY), the plaintext opt-in (SPONSON_STATE_PLAINTEXT) and the
// retry budget (SPONSON_STORE_BUDGET). A malformed value is a USAGE error, so
// a typo never silently means "no key".
func FromEnv(getenv func(string) string) ([]Option, error) {
	var opts []Option
	if raw := strings.TrimSpace(getenv(EnvStateKey)); raw != "" {
		key, err := ParseKey(raw)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithStateKey(key))
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvStatePlaintext))); v {
	case "", "0", "false", "no":
	case "1", "true", "yes":
		opts = append(opts, WithPlaintextState())
	default:
		return nil, errcode.New(errcode.Usage, "%s=%q: use 1 to allow plaintext state, or leave it unset", EnvStatePlaintext, v)
	}
	if raw := strings.TrimSpace(getenv(EnvBudget)); raw != "" {
		d, err := parseBudget(raw)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithBudget(d))
	}
	return opts, nil
}

// ParseKey decodes a state key: 64 hex digits, or base64 of 32 bytes. The
// error never repeats the value.
func ParseKey(raw string) ([]byte, error) {
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
	return nil, errcode.New(errcode.Usage, "%s is not a %d-byte key in hex or base64 (it has %d characters)", EnvStateKey, KeySize, len(raw)).WithHint(keyHint)
}

func parseBudget(raw string) (time.Duration, error) {
	if secs, err := strconv.ParseFloat(raw, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(raw); err == nil && d > 0 {
		return d, nil
	}
	return 0, errcode.New(errcode.Usage, "%s=%q is not a positive duration (e.g. 60s, 2m, or 90 for seconds)", EnvBudget, raw)
}

// keyID names a key without revealing it: a keyed hash, truncated.
func keyID(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sponson state key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// seal encrypts plain with AES-256-GCM under a fresh random nonce. The header
// line and context (which scope, which document) are authenticated, so a
// sealed state copied into another scope's branch does not open there.
func seal(key []byte, context string, plain []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	header := sealedMagic + keyID(key) + "\n"
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "draw a nonce")
	}
	out := append([]byte(header), nonce...)
	return gcm.Seal(out, nonce, plain, []byte(header+context)), nil
}

// unseal reverses seal; what names the document in errors.
func unseal(key []byte, context, what string, data []byte) ([]byte, error) {
	line, body, ok := bytes.Cut(data, []byte("\n"))
	id, magic := strings.CutPrefix(string(line), sealedMagic)
	if !ok || !magic {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s is not a sealed Sponson state (unknown header)", what).
			WithHint("Restore it from the branch's history.")
	}
	if key == nil {
		return nil, errcode.New(errcode.Usage, "%s is encrypted (key %s) and %s is not set", what, id, EnvStateKey).WithHint(keyHint)
	}
	if id != keyID(key) {
		return nil, errcode.New(errcode.Usage, "%s was encrypted with key %s, but %s is key %s", what, id, EnvStateKey, keyID(key)).
			WithHint("Use the key the earlier runs used; the ids are keyed hashes of the keys.")
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(body) < gcm.NonceSize() {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s is truncated", what).WithHint("Restore it from the branch's history.")
	}
	aad := string(line) + "\n" + context
	plain, err := gcm.Open(nil, body[:gcm.NonceSize()], body[gcm.NonceSize():], []byte(aad))
	if err != nil {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s does not decrypt with key %s: it was altered or belongs to another scope", what, id).
			WithHint("Restore it from the branch's history.")
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
