// Package savedplan is the file `sponson plan -out FILE` writes and `sponson
// apply FILE` applies: the engine's own saved plan together with what
// Sponson decided when it made it (stack, environment, scope, commit, the
// state it was made against, the ownership of every identity it touches,
// the approval it needs, the succession it includes). The apply compares
// all of it with the store as it is then and refuses a plan that went stale
// (docs/design.md §4.2 "Saved plans").
//
// The file never holds the state server's secret or a state key: the engine
// reads those from its environment, which a saved plan does not record
// (measured with OpenTofu 1.12.6: the plan's backend block is empty). It
// does hold the engine's plan, and so the configuration's variable values
// and the prior state, sensitive ones included: it is written with mode
// 0600 and must be kept like a state file.
//
// The file ends with a seal over everything before it: a SHA-256 digest, or
// an HMAC-SHA256 with the key in SPONSON_PLAN_KEY when that is set. A
// truncated or altered file fails the seal and is refused (PLAN_CORRUPT).
// The digest detects damage; only the keyed seal detects a deliberate
// forgery, which is why the apply also re-derives every check (ownership,
// approval) from the engine's plan itself rather than trusting the record.
//
// The file keeps the plan's JSON and its redacted text, which `sponson show
// [-json] FILE` prints without an engine and `plan --json-plan FILE` writes
// for the tools that read plan JSON.
package savedplan

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// Format is the first line of every saved plan this build writes and the
// only one it reads.
const Format = "sponson-plan/1"

// KeyEnv names the variable holding the hex key of the keyed seal.
const KeyEnv = "SPONSON_PLAN_KEY"

// Meta is what Sponson decided when it made the plan.
type Meta struct {
	Sponson     string         `json:"sponson"`
	RunID       string         `json:"runId"`
	CreatedAt   time.Time      `json:"createdAt"`
	Destroy     bool           `json:"destroy,omitempty"`
	Stack       string         `json:"stack,omitempty"`
	Environment string         `json:"environment"`
	Scope       string         `json:"scope"`
	Commit      string         `json:"commit,omitempty"`
	Branch      string         `json:"branch,omitempty"`
	PullRequest int            `json:"pullRequest,omitempty"`
	Engine      receipt.Engine `json:"engine"`
	// State is the state the plan was made against: the scope's own, or
	// its predecessor's when the plan includes a succession.
	State StateMark `json:"state"`
	// Receipt is the run id of the scope's latest receipt when the plan
	// was made ("" for a scope never applied).
	Receipt string `json:"receipt,omitempty"`
	// Succession is set when the apply will take over a predecessor.
	Succession *Succession `json:"succession,omitempty"`
	// Touches lists the identities of every planned change; Owners every
	// owner those identities had in other scopes of the environment.
	Touches []Touch       `json:"touches"`
	Owners  []store.Owner `json:"owners"`
	// ApprovalNeeded is set when the apply will need a named approver.
	ApprovalNeeded bool `json:"approvalNeeded,omitempty"`
	// Reads are the other stacks' states the plan's sponson_outputs read
	// (docs/design.md §6.4): the apply refuses the plan when one changed.
	Reads []receipt.StackRead `json:"reads,omitempty"`
}

// StateMark identifies one version of a state.
type StateMark struct {
	Of      string `json:"of"` // the scope whose state it is
	Lineage string `json:"lineage,omitempty"`
	Serial  int64  `json:"serial"`
	// Digest is the SHA-256 of the state document, "" when there was none.
	Digest string `json:"digest,omitempty"`
}

// Succession is the takeover the plan includes.
type Succession struct {
	From    string `json:"from"`
	FromRun string `json:"fromRun"`
}

// Touch is one planned change by address and identity.
type Touch struct {
	Address  string   `json:"address"`
	Identity string   `json:"identity,omitempty"`
	Actions  []string `json:"actions"`
	// Keys are every identity the foreign check matched the change under.
	Keys []string `json:"keys,omitempty"`
}

// File is a saved plan: the record and the engine's plan file as the
// engine wrote it.
type File struct {
	Meta Meta   `json:"meta"`
	Plan []byte `json:"plan"`
	// PlanJSON is the engine's `show -json` of Plan, byte for byte, and
	// PlanText its text with the values the plan marks sensitive redacted:
	// what `sponson show [-json] FILE` prints without an engine, so that
	// the tools around a pipeline read the plan a reviewer approves.
	PlanJSON []byte `json:"planJson,omitempty"`
	PlanText string `json:"planText,omitempty"`
}

// Mark returns the mark of a state document (nil or empty: no state).
func Mark(of string, state []byte) StateMark {
	m := StateMark{Of: of}
	if len(bytes.TrimSpace(state)) == 0 {
		return m
	}
	s, _ := tfstate.ReadMeta(state)
	sum := sha256.Sum256(state)
	m.Lineage, m.Serial, m.Digest = s.Lineage, s.Serial, hex.EncodeToString(sum[:])
	return m
}

// Same reports whether two marks name the same state.
func (m StateMark) Same(o StateMark) bool { return m.Of == o.Of && m.Digest == o.Digest }

func (m StateMark) String() string {
	if m.Digest == "" {
		return "no state"
	}
	return fmt.Sprintf("serial %d of lineage %s", m.Serial, m.Lineage)
}

// Key reads the seal key from the environment: nil when unset.
func Key(getenv func(string) string) ([]byte, error) {
	v := strings.TrimSpace(getenv(KeyEnv))
	if v == "" {
		return nil, nil
	}
	k, err := hex.DecodeString(v)
	if err != nil || len(k) < 16 {
		return nil, errcode.New(errcode.Usage, "%s must be at least 32 hex digits", KeyEnv)
	}
	return k, nil
}

// Encode renders f with its seal.
func Encode(f *File, key []byte) ([]byte, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(Format + "\n")
	b.Write(body)
	b.WriteString("\n")
	b.WriteString("seal " + Seal(b.Bytes(), key) + "\n")
	return b.Bytes(), nil
}

// Seal is the seal of data: a SHA-256 digest, or an HMAC-SHA256 with key.
func Seal(data, key []byte) string {
	if key == nil {
		sum := sha256.Sum256(data)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// Decode reads a saved plan and checks its seal. Anything wrong is
// PLAN_CORRUPT: nothing of a damaged file is trusted.
func Decode(data, key []byte) (*File, error) {
	bad := func(format string, args ...any) error {
		return errcode.New(errcode.PlanCorrupt, format, args...)
	}
	if !bytes.HasPrefix(data, []byte(Format+"\n")) {
		if bytes.HasPrefix(data, []byte("sponson-plan/")) {
			return nil, bad("the plan file was written by another version of sponson (%s)", firstLine(data))
		}
		return nil, bad("the file is not a sponson saved plan (it does not start with %q)", Format)
	}
	signed, got, ok := SplitSeal(data)
	if !ok {
		return nil, bad("the plan file is truncated (no seal at its end)")
	}
	if err := CheckSeal(signed, got, key); err != nil {
		return nil, bad("the plan file %v", err)
	}
	body := signed[len(Format)+1 : len(signed)-1]
	var f File
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, errcode.Wrap(errcode.PlanCorrupt, err, "the plan file's record cannot be read")
	}
	if len(f.Plan) == 0 || f.Meta.Environment == "" || f.Meta.Scope == "" {
		return nil, bad("the plan file holds no engine plan or no scope")
	}
	return &f, nil
}

// SplitSeal splits a sealed document into what the seal covers and the
// seal; ok is false when data does not end with a seal line.
func SplitSeal(data []byte) (signed []byte, got string, ok bool) {
	if !bytes.HasSuffix(data, []byte("\n")) {
		return nil, "", false
	}
	cut := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if cut < 0 || !bytes.HasPrefix(data[cut+1:], []byte("seal ")) {
		return nil, "", false
	}
	return data[:cut+1], strings.TrimSpace(string(data[cut+1+len("seal "):])), true
}

// CheckSeal checks that got seals signed with key (the digest when key is
// nil); its error completes a sentence about the document ("... does not
// match its seal").
func CheckSeal(signed []byte, got string, key []byte) error {
	switch {
	case strings.HasPrefix(got, "hmac-sha256:") && key == nil:
		return fmt.Errorf("is sealed with a key and %s is not set", KeyEnv)
	case strings.HasPrefix(got, "sha256:") && key != nil:
		return fmt.Errorf("has no keyed seal and %s is set: it was not made with that key", KeyEnv)
	}
	if !hmac.Equal([]byte(got), []byte(Seal(signed, key))) {
		return fmt.Errorf("does not match its seal: it was altered or truncated after sponson wrote it")
	}
	return nil
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

// Write saves f to path with mode 0600, atomically: a reader never sees a
// half-written plan.
func Write(path string, f *File, key []byte) error {
	data, err := Encode(f, key)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encoding the saved plan")
	}
	return WritePrivate(path, data)
}

// WritePrivate writes data to path with mode 0600, atomically: a reader
// never sees half of it.
func WritePrivate(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "cannot write the plan file %s", path)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return errcode.Wrap(errcode.Internal, err, "restricting the plan file %s", path)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return errcode.Wrap(errcode.Internal, err, "writing the plan file %s", path)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return errcode.Wrap(errcode.Internal, err, "writing the plan file %s", path)
	}
	if err := tmp.Close(); err != nil {
		return errcode.Wrap(errcode.Internal, err, "writing the plan file %s", path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return errcode.Wrap(errcode.Internal, err, "writing the plan file %s", path)
	}
	return nil
}

// Read loads and checks the saved plan at path.
func Read(path string, key []byte) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errcode.Wrap(errcode.Usage, err, "cannot read the plan file %s", path)
	}
	f, err := Decode(data, key)
	if err != nil {
		e := errcode.As(err)
		e.Message = path + ": " + e.Message
		return nil, e
	}
	return f, nil
}
