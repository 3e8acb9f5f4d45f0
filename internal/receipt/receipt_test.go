package receipt_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

func full() *receipt.Receipt {
	start := time.Date(2025, 3, 4, 10, 2, 0, 123456789, time.UTC)
	return &receipt.Receipt{
		Version:     receipt.Version,
		RunID:       "7aba4410",
		Command:     "apply",
		Environment: "preview",
		Scope:       "pr-42",
		Status:      receipt.StatusApplied,
		StartedAt:   start,
		FinishedAt:  start.Add(90 * time.Second),
		Branch:      "feat/search",
		PullRequest: 42,
		Commit:      "0123abcd",
		ApprovedBy:  "alice",
		Engine:      receipt.Engine{Name: "opentofu", Version: "1.12.6"},
		Changes: []receipt.Change{
			{Address: "null_resource.a", Type: "null_resource", Actions: []string{"create"}},
			{Address: "null_resource.b", Type: "null_resource", Actions: []string{"delete", "create"}},
		},
		Ledger: []receipt.Entry{
			{Identity: "registry.opentofu.org/hashicorp/null|null_resource|1", Address: "null_resource.a", Provider: "registry.opentofu.org/hashicorp/null", Type: "null_resource", ID: "1", CreatedBy: receipt.CreatedBySponson},
			{Identity: "registry.opentofu.org/hashicorp/null|null_resource|2", Address: "null_resource.b", Provider: "registry.opentofu.org/hashicorp/null", Type: "null_resource", CreatedBy: receipt.CreatedByInherited},
		},
		LockPreempted: &receipt.Preempted{Holder: "3c1f", Since: start.Add(-time.Hour), Until: start.Add(-time.Minute)},
		InheritedFrom: "branch-feat-search",
		SupersededBy:  "8bcd",
		Settled: []receipt.Settlement{
			{Address: "null_resource.c", FromRun: "3c1f", Outcome: receipt.SettledClaimed},
			{Address: "null_resource.d", FromRun: "3c1f", Outcome: receipt.SettledDropped},
		},
		Error: &receipt.Failure{Code: "ENGINE_FAILED", Message: "boom"},
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	minimal := &receipt.Receipt{
		Version:     receipt.Version,
		RunID:       "r1",
		Command:     "plan",
		Environment: "dev",
		Scope:       "main",
		Status:      receipt.StatusRunning,
		StartedAt:   time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		Changes:     []receipt.Change{},
		Ledger:      []receipt.Entry{},
	}
	tests := []struct {
		name string
		r    *receipt.Receipt
	}{
		{"full", full()},
		{"minimal", minimal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data, err := receipt.Marshal(tt.r)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if !bytes.HasSuffix(data, []byte("}\n")) {
				t.Errorf("Marshal output does not end with a newline after the document: %q", data[max(0, len(data)-10):])
			}
			got, err := receipt.Parse(data)
			if err != nil {
				t.Fatalf("Parse(Marshal(r)): %v", err)
			}
			if diff := cmp.Diff(tt.r, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarshalOmitsEmptyOptionals(t *testing.T) {
	t.Parallel()
	data, err := receipt.Marshal(&receipt.Receipt{Version: 1, RunID: "r", Environment: "e", Scope: "s"})
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("Marshal output is not JSON: %v", err)
	}
	for _, k := range []string{"finishedAt", "branch", "pullRequest", "commit", "approvedBy", "engine", "lockPreempted", "inheritedFrom", "supersededBy", "settledIntents", "error"} {
		if _, ok := doc[k]; ok {
			t.Errorf("empty %s is written: %s", k, data)
		}
	}
	for _, k := range []string{"version", "runId", "environment", "scope", "startedAt", "changes", "ledger"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("%s is missing: %s", k, data)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want errcode.Code
	}{
		{"empty", ``, errcode.ReceiptCorrupt},
		{"not JSON", `this is not a receipt`, errcode.ReceiptCorrupt},
		{"truncated", `{"version": 1, "runId": "r"`, errcode.ReceiptCorrupt},
		{"array", `[1, 2]`, errcode.ReceiptCorrupt},
		{"no version", `{"runId": "r", "environment": "e", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"null version", `{"version": null, "runId": "r", "environment": "e", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"version is a string", `{"version": "1", "runId": "r", "environment": "e", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"version 3", `{"version": 3, "runId": "r", "environment": "e", "scope": "s"}`, errcode.ReceiptVersion},
		{"version 0", `{"version": 0, "runId": "r", "environment": "e", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"version -1", `{"version": -1, "runId": "r", "environment": "e", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"newer version with unknown shape", `{"version": 3, "runId": 5}`, errcode.ReceiptVersion},
		{"no runId", `{"version": 1, "environment": "e", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"empty runId", `{"version": 1, "runId": "", "environment": "e", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"no environment", `{"version": 1, "runId": "r", "scope": "s"}`, errcode.ReceiptCorrupt},
		{"no scope", `{"version": 1, "runId": "r", "environment": "e"}`, errcode.ReceiptCorrupt},
		{"wrong field type", `{"version": 1, "runId": "r", "environment": "e", "scope": "s", "changes": "x"}`, errcode.ReceiptCorrupt},
		{"bad time", `{"version": 1, "runId": "r", "environment": "e", "scope": "s", "startedAt": "yesterday"}`, errcode.ReceiptCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := receipt.Parse([]byte(tt.data))
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want %s", tt.data, r, tt.want)
			}
			if !errcode.Is(err, tt.want) {
				t.Errorf("Parse(%s) error = %v, want code %s", tt.data, err, tt.want)
			}
			if r != nil {
				t.Errorf("Parse(%s) returned a receipt with an error: %+v", tt.data, r)
			}
		})
	}
}

func TestParseValidMinimal(t *testing.T) {
	t.Parallel()
	got, err := receipt.Parse([]byte(`{"version": 1, "runId": "r", "environment": "e", "scope": "s", "unknownField": true}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &receipt.Receipt{Version: 1, RunID: "r", Environment: "e", Scope: "s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}
