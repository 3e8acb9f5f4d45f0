package provider

import (
	"context"
	"encoding/json"
	"testing"
)

// The engine's TF_REATTACH_PROVIDERS names the served provider under both
// registry hosts, keeps the providers the user reattaches, and refuses a
// value that is not the engines' JSON.
func TestInProcessEnviron(t *testing.T) {
	srv, err := ServeInProcess(context.Background(), "0.0.1", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	user := `{"registry.terraform.io/acme/debugged":{"Protocol":"grpc","ProtocolVersion":6,"Pid":1,"Test":true,"Addr":{"Network":"unix","String":"/tmp/x"}}}`
	got, err := srv.Environ(user)
	if err != nil {
		t.Fatal(err)
	}
	var entries map[string]reattachConfig
	if err := json.Unmarshal([]byte(got), &entries); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	for _, key := range []string{"registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson", "registry.terraform.io/acme/debugged"} {
		if _, ok := entries[key]; !ok {
			t.Errorf("no %s in %s", key, got)
		}
	}
	own := entries["registry.opentofu.org/sponson/sponson"]
	if own.Protocol != "grpc" || own.ProtocolVersion != 6 || !own.Test || own.Addr.Network != "unix" || own.Addr.String == "" {
		t.Errorf("reattach entry %+v: want grpc protocol 6 in test mode on a unix socket", own)
	}
	if _, err := srv.Environ("not json"); err == nil {
		t.Error("a value that is not JSON was accepted")
	}
}
