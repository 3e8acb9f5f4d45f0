package ownership

import (
	"encoding/json"
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// SchemesFromRecord is the record, beside SchemesRecord under the intent
// lease's key, of the rules the recorded schemes came from: a scheme moves
// only forward, to the rules of a newer revision of the default branch
// (docs/design.md §2.18 "Trusted rules").
const SchemesFromRecord = "identity-schemes-from"

// Origin is where a declaration came from: the commit of the trusted
// revision whose sponson.hcl declared it, and whether it was trusted at all
// (a local run without the default branch uses its checkout's).
type Origin struct {
	Commit  string `json:"commit,omitempty"`
	Trusted bool   `json:"trusted"`
}

// EncodeOrigin is o as SchemesFromRecord holds it.
func EncodeOrigin(o Origin) []byte {
	b, _ := json.Marshal(o) // two plain fields always encode
	return b
}

// ParseOrigin reads a SchemesFromRecord; nil data (schemes recorded before
// origins were, or none) is an untrusted origin of unknown commit.
func ParseOrigin(data []byte) (Origin, error) {
	var o Origin
	if len(data) == 0 {
		return o, nil
	}
	err := json.Unmarshal(data, &o)
	return o, err
}

// MayChangeSchemes decides whether rules from origin now may move an
// environment's schemes away from those recorded from origin was: only
// trusted rules move schemes that trusted rules set, and only forward, to a
// commit that descends from the one recorded (isAncestor(a, b): a is b or
// an ancestor of it). A refusal says which rules set the schemes.
func MayChangeSchemes(env string, was, now Origin, isAncestor func(a, b string) (bool, error)) error {
	if !was.Trusted {
		return nil // set by untrusted rules, or never: any run may move them
	}
	if !now.Trusted {
		return errcode.New(errcode.RulesUntrusted, "the identity schemes of %s were set by the trusted rules of commit %s; this run's rules are its checkout's (a local run), which cannot change them", env, short(was.Commit)).
			WithHint("Run from a clone that has the default branch (git fetch origin), or change the scheme on the default branch.")
	}
	if was.Commit == "" || now.Commit == "" || was.Commit == now.Commit {
		return nil
	}
	ok, err := isAncestor(was.Commit, now.Commit)
	if err != nil || !ok {
		why := "is not an ancestor of"
		if err != nil {
			why = fmt.Sprintf("cannot be compared with (%v)", err)
		}
		return errcode.New(errcode.RulesStale, "the identity schemes of %s were set by the rules of commit %s, which %s the commit %s this run read its rules from", env, short(was.Commit), why, short(now.Commit)).
			WithHint("Fetch the default branch again and re-run; a scheme moves only forward, to newer rules of the default branch.")
	}
	return nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	if c == "" {
		return "(unknown)"
	}
	return c
}
