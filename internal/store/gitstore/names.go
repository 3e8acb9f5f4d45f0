package gitstore

import (
	"encoding/hex"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// branchRoot is the namespace of the store's branches on the remote: one
// branch per environment, stack and scope,
// refs/heads/sponson-stacks/<env>/<S>/<scope>, S being the stack encoded by
// store.StackSegment ("_" for the parent leases every stack shares).
const branchRoot = "refs/heads/sponson-stacks/"

// legacyRoot is the namespace of the layout before stacks (layout 1):
// refs/heads/sponson-receipts/<env>/<scope>. Migrate copies it; nothing else
// reads or writes it.
const legacyRoot = "refs/heads/sponson-receipts/"

// layoutRoot holds one branch per layout version the remote was written in,
// refs/heads/sponson-layout/<n>: the version is in the ref's name, so one
// ls-remote tells it without a fetch.
const layoutRoot = "refs/heads/sponson-layout/"

// maxSegment bounds an encoded ref component: a ref stored as a file on the
// remote gets a ".lock" sibling while it is updated, and file names end at
// 255 bytes.
const maxSegment = 250

// checkName refuses anything that is not one plain name before the remote is
// touched (docs/design.md §9: no name can reach another ref).
func checkName(what, name string) error {
	if err := store.CheckName(what, name); err != nil {
		return err
	}
	if len(refSegment(name)) > maxSegment {
		return errcode.New(errcode.Usage, "%s name %q is too long for a git ref once encoded (%d bytes); shorten it or avoid \"..\", a final \".\" and \".lock\"", what, name, len(refSegment(name))).With("name", name)
	}
	return nil
}

func checkKey(k store.Key) error {
	if err := store.CheckKey(k); err != nil {
		return err
	}
	if err := checkName("environment", k.Environment); err != nil {
		return err
	}
	return checkName("scope", k.Scope)
}

// refSegment maps a name to one ref path component, one to one. Characters
// outside [a-zA-Z0-9._-] would become "-", but checkName already refuses
// them, so for every accepted name that step changes nothing and cannot make
// two names meet. A name that is still not a valid ref component (a final
// ".", a ".lock" suffix, "..") is written as "=" followed by its hex: "="
// never occurs in a plain name, so encoded and plain segments cannot collide
// either, and the segment decodes back to exactly one name.
func refSegment(name string) string {
	clean := strings.Map(func(r rune) rune {
		if isRefChar(r) {
			return r
		}
		return '-'
	}, name)
	if clean == name && plainComponent(name) {
		return name
	}
	return "=" + hex.EncodeToString([]byte(name))
}

// nameOf decodes a ref component written by refSegment; ok is false for
// anything refSegment cannot have written (a branch a human added).
func nameOf(seg string) (string, bool) {
	if rest, enc := strings.CutPrefix(seg, "="); enc {
		b, err := hex.DecodeString(rest)
		if err != nil {
			return "", false
		}
		name := string(b)
		if checkName("name", name) != nil || refSegment(name) != seg {
			return "", false
		}
		return name, true
	}
	if checkName("name", seg) != nil || refSegment(seg) != seg {
		return "", false
	}
	return seg, true
}

func isRefChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// plainComponent reports whether s, made of ref characters only, is a valid
// ref path component as git check-ref-format defines it.
func plainComponent(s string) bool {
	return s != "" && !strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".") &&
		!strings.HasSuffix(s, ".lock") && !strings.Contains(s, "..")
}

// envPrefix is the ref prefix of every branch of env, ending in "/".
func envPrefix(env string) string { return branchRoot + refSegment(env) + "/" }

// branchOf is the full ref of a scope's branch.
func branchOf(k store.Key) string {
	return envPrefix(k.Environment) + store.StackSegment(k.Stack) + "/" + refSegment(k.Scope)
}

// legacyBranchOf is the ref of an environment and scope in the layout
// before stacks.
func legacyBranchOf(env, scope string) string {
	return legacyRoot + refSegment(env) + "/" + refSegment(scope)
}
