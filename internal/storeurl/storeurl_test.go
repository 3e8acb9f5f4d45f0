package storeurl

import "testing"

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://sponson:hunter2@db/sponson":             "postgres://sponson@db/sponson",
		"postgres://sponson@db/sponson":                     "postgres://sponson@db/sponson",
		"git+https://x-access-token:ghp_abc@github.com/o/r": "git+https://x-access-token@github.com/o/r",
		"git+https://ghp_abc@github.com/o/r":                "git+https://***@github.com/o/r",
		"https://ghp_abc@github.com/o/r":                    "https://***@github.com/o/r",
		"file:///tmp/store":                                 "file:///tmp/store",
		"git":                                               "git",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
