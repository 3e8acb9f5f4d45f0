package store

import (
	"fmt"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// segment is what an environment, scope, run id or record name may be in
// every store: one plain path segment or ref component, so a name that one
// backend accepts every backend accepts, and none can climb out of its
// directory or reach another ref (docs/design.md §9). A loop, not a
// regular expression: `{1,128}` compiles to 128 copies of the class, which
// every sponson process paid at start (§8).
func segment(name string) bool { return plainChars(name, 128, "._-") }

// plainChars reports whether s is 1 to most of a-z A-Z 0-9 and extra.
func plainChars(s string, most int, extra string) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainChar(s[i]) && strings.IndexByte(extra, s[i]) < 0 {
			return false
		}
	}
	return true
}

func plainChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// CheckName refuses anything that is not one plain name, before a backend
// touches its storage: ".", ".." and hidden names included.
func CheckName(what, name string) error {
	if !segment(name) || strings.HasPrefix(name, ".") {
		return errcode.New(errcode.Usage, "invalid %s name %q: use 1 to 128 of a-z A-Z 0-9 . _ -, not starting with a dot", what, name).With("name", name)
	}
	return nil
}

// CheckKey checks the names of a key. Only a parent lease has no stack.
func CheckKey(k Key) error {
	if err := CheckName("environment", k.Environment); err != nil {
		return err
	}
	if err := CheckName("scope", k.Scope); err != nil {
		return err
	}
	if k.Stack == "" {
		if !strings.HasPrefix(k.Scope, ParentScopePrefix) {
			return errcode.New(errcode.Internal, "scope %s/%s has no stack", k.Environment, k.Scope)
		}
		return nil
	}
	return CheckStack(k.Stack)
}

// stackChars is what a stack name is made of: plain names joined by "/", as
// a repository path is ("github.com/acme/infra//stacks/app": the "//"
// separates the repository from the directory in it).
func stackChars(name string) bool { return plainChars(name, 200, "._/-") }

// maxStackSegment bounds the encoded stack: it is one file name (255 bytes)
// or ref component in the stores, with room for a ".lock" or temporary
// suffix.
const maxStackSegment = 240

// CheckStack refuses a stack name that is not 1 to 200 of a-z A-Z 0-9 . _ /
// -, that starts or ends with "/" or ".", contains "..", has a "." path
// element or ends in ".lock". Every accepted name has one encoding
// (StackSegment) that is a plain file name, ref component and row value.
func CheckStack(name string) error {
	bad := !stackChars(name) || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") ||
		strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") ||
		strings.Contains(name, "/./") || strings.HasSuffix(name, ".lock")
	if bad {
		return errcode.New(errcode.Usage, "invalid stack name %q: use 1 to 200 of a-z A-Z 0-9 . _ / -, not starting or ending with \"/\" or \".\", without \"..\"", name).With("stack", name)
	}
	if n := len(StackSegment(name)); n > maxStackSegment {
		return errcode.New(errcode.Usage, "stack name %q is too long once encoded for the store (%d bytes, at most %d); pass a shorter --stack", name, n, maxStackSegment).With("stack", name)
	}
	return nil
}

// sharedSegment is the segment of the keys without a stack (parent leases).
// StackSegment never returns it for a stack: "_" is always followed by two
// hexadecimal digits there.
const sharedSegment = "_"

// StackSegment encodes a stack name as one path segment and ref component,
// one to one: a-z A-Z 0-9 . - stay, every other byte ("/", "_") becomes "_"
// and two lower-case hexadecimal digits. "github.com/acme/infra//app"
// becomes "github.com_2facme_2finfra_2f_2fapp". The empty stack (parent
// leases) is "_". CheckStack has refused every name whose encoding could
// start with a dot, contain "..", or end in "." or ".lock".
func StackSegment(stack string) string {
	if stack == "" {
		return sharedSegment
	}
	var b strings.Builder
	for i := 0; i < len(stack); i++ {
		c := stack[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}

// StackOf decodes a segment written by StackSegment; ok is false for
// anything StackSegment cannot have written (a file a human left behind).
func StackOf(seg string) (stack string, ok bool) {
	if seg == sharedSegment {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", false
		}
		var v byte
		if _, err := fmt.Sscanf(seg[i+1:i+3], "%02x", &v); err != nil {
			return "", false
		}
		b.WriteByte(v)
		i += 2
	}
	stack = b.String()
	if CheckStack(stack) != nil || StackSegment(stack) != seg {
		return "", false
	}
	return stack, true
}
