package receipt_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// carried are the fields Next takes from prev; every other field of a
// Receipt describes one run. A field added to Receipt fails this test until
// it is put on one side: Next says once what a successor carries over.
var carried = map[string]bool{
	"Stack": true, "Environment": true, "Scope": true, "Branch": true, "PullRequest": true, "Commit": true,
	"Ledger": true, "Completed": true, "HeldCompletions": true,
	"InheritedFrom": true, "Inheriting": true, "SupersededBy": true, "Handover": true,
	"MovedTo": true, "MovedFrom": true,
	"Released": true, "Reconciled": true,
}

// ofRun are the fields of the run itself, from receipt.Run.
var ofRun = map[string]bool{"Version": true, "RunID": true, "Command": true, "Status": true, "Actor": true, "JobURL": true, "StartedAt": true, "FinishedAt": true}

func TestNextCarriesTheScopeAndNothingOfTheRun(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	prev := everyField(at)
	run := receipt.Run{RunID: "run-next", Command: "state rm", Status: receipt.StatusApplied, Actor: "bob", JobURL: "https://ci.example/jobs/1", StartedAt: at.Add(time.Hour), FinishedAt: at.Add(2 * time.Hour)}
	next := receipt.Next(prev, run)
	pv, nv := reflect.ValueOf(prev).Elem(), reflect.ValueOf(next).Elem()
	for i := range pv.NumField() {
		f := pv.Type().Field(i)
		got := nv.Field(i).Interface()
		switch {
		case carried[f.Name]:
			if d := cmp.Diff(pv.Field(i).Interface(), got); d != "" {
				t.Errorf("%s is not carried over (-prev +next):\n%s", f.Name, d)
			}
		case ofRun[f.Name]:
		case f.Name == "Changes":
			if d := cmp.Diff([]receipt.Change{}, got); d != "" {
				t.Errorf("Changes of the successor (-want +got):\n%s", d)
			}
		default:
			if !nv.Field(i).IsZero() {
				t.Errorf("%s of one run is carried over: %v", f.Name, got)
			}
		}
	}
	want := receipt.Run{RunID: next.RunID, Command: next.Command, Status: next.Status, Actor: next.Actor, JobURL: next.JobURL, StartedAt: next.StartedAt, FinishedAt: next.FinishedAt}
	if want != run || next.Version != receipt.Version {
		t.Errorf("the successor's run is %+v (version %d), want %+v", want, next.Version, run)
	}
	// Copies: the successor's slices are its own.
	next.Ledger[0].Address = "changed"
	next.Released[0].Address = "changed"
	if prev.Ledger[0].Address == "changed" || prev.Released[0].Address == "changed" {
		t.Error("Next shares prev's slices")
	}
	if first := receipt.Next(receipt.First("acme/app", "preview", "pr-1"), run); first.Ledger == nil || first.Scope != "pr-1" || first.Stack != "acme/app" {
		t.Errorf("the first receipt: %+v", first)
	}
}

// everyField is a receipt with every field set.
func everyField(at time.Time) *receipt.Receipt {
	r := &receipt.Receipt{}
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		setAny(v.Field(i), at)
	}
	return r
}

func setAny(v reflect.Value, at time.Time) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setAny(s.Index(0), at)
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		setAny(p.Elem(), at)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(at))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				setAny(v.Field(i), at)
			}
		}
	}
}
