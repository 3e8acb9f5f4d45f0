package runctx

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// MaxNameLength is the longest environment or scope name. Names become path
// segments and ref names, and every file system and ref store we write to
// accepts a segment of this length.
const MaxNameLength = 128

// nameChars describes the allowed characters in messages.
const nameChars = "letters, digits, '.', '_' and '-'"

// ScopeFor derives a scope from a branch and a pull request: pr-<n> inside a
// pull request, main on the repository's default branch, and
// branch-<sanitized branch> otherwise (DESIGN §2 "Scope"). The default branch
// gets one well-known scope whatever it is called, so that its resources are
// not split between main and branch-main when a repository is renamed.
//
// When the default branch is known (the CI host's payload or variables, or
// the clone's origin/HEAD), it alone is main: in a repository whose default
// branch is develop, a long-lived master keeps its own scope branch-master
// rather than sharing develop's state. When it is unknown, main and master
// are taken to be the default branch, which is what they nearly always are.
//
// A branch's scope is BranchScope's: unique per branch, and the same at
// every run of it.
func ScopeFor(branch string, pr int, defaultBranch string) string {
	if pr > 0 {
		return "pr-" + strconv.Itoa(pr)
	}
	if IsDefaultBranch(branch, defaultBranch) {
		return "main"
	}
	return BranchScope(branch)
}

// BranchScope is the scope of a branch that is not the default one:
// branch-<name>, the name as it is when it holds only characters a scope
// name allows and single '/' separators (feat/Search → branch-feat-Search).
// When Sanitize had to replace anything else (feature/ÜBER#2 and
// feature/BER-2 both sanitize to feature-BER-2), or the name would be
// longer than MaxNameLength (a Renovate branch), the scope ends in eight
// hex digits of the SHA-256 of the whole branch name, and a long name is
// cut to make room: two branches never share a scope, and so a state,
// through their names (issue 52). A '/' becomes '-' without a hash, so that
// the scopes of ordinary branches keep the names they have always had;
// feature/x and feature-x still share one, and so would a branch named
// like another's hashed scope (feature-BER-2-487ace38): neither happens by
// accident.
func BranchScope(branch string) string {
	name := LegacyBranchScope(branch)
	if plainBranch(branch) && len(name) <= MaxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(branch))
	suffix := "-" + hex.EncodeToString(sum[:4])
	if limit := MaxNameLength - len(suffix); len(name) > limit {
		name = strings.TrimRight(name[:limit], "-")
	}
	return name + suffix
}

// LegacyBranchScope is the scope a branch got before BranchScope added
// hashes: branch-<Sanitize(branch)>, whatever it dropped. gc keeps it for a
// branch that still exists, so that upgrading never collects the scope of
// a live branch whose name has characters a scope name lacks.
func LegacyBranchScope(branch string) string { return "branch-" + Sanitize(branch) }

// plainBranch reports whether Sanitize keeps every character of branch but
// its single '/' separators, which become '-'.
func plainBranch(branch string) bool {
	for i := 0; i < len(branch); i++ {
		c := branch[i]
		if isNameChar(c) || c == '/' && i > 0 && branch[i-1] != '/' {
			continue
		}
		return false
	}
	return true
}

// IsDefaultBranch reports whether branch is the repository's default branch:
// defaultBranch itself when known, else main or master.
func IsDefaultBranch(branch, defaultBranch string) bool {
	if defaultBranch != "" {
		return branch == defaultBranch
	}
	return branch == "main" || branch == "master"
}

// Sanitize replaces every run of characters outside [a-zA-Z0-9._-] with one
// '-', so that a branch name can be part of a path segment and a ref name.
// Case is kept (feat/Search → feat-Search): lowercasing would make two
// branches that git keeps apart share one scope and so one state.
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inRun := false
	// Bytes, not runes: every byte of a multi-byte or invalid UTF-8 sequence
	// is outside the allowed set, so a sequence still becomes one '-'.
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isNameChar(c) {
			b.WriteByte(c)
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('-')
			inRun = true
		}
	}
	return b.String()
}

// ValidName checks an environment or scope name; kind ("environment",
// "scope") names it in the error. Names become path segments of the store
// and parts of ref names, so this is a security boundary (DESIGN §9): only
// [a-zA-Z0-9._-], 1 to MaxNameLength characters, and no leading '.', which
// rules out "." and ".." (path traversal) and hidden files.
func ValidName(kind, s string) error {
	bad := func(why string) error {
		return errcode.New(errcode.Usage, "invalid %s name %q: %s; a name is 1 to %d characters of %s and does not start with '.'",
			kind, s, why, MaxNameLength, nameChars)
	}
	switch {
	case s == "":
		return bad("it is empty")
	case len(s) > MaxNameLength:
		return bad("it is " + strconv.Itoa(len(s)) + " characters long")
	case s[0] == '.':
		return bad("it starts with '.'")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isNameChar(c) {
			if c >= utf8.RuneSelf {
				return bad("it contains a non-ASCII character")
			}
			return bad("it contains " + strconv.QuoteRune(rune(c)))
		}
	}
	return nil
}

func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
