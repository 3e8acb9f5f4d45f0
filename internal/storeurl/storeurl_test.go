package storeurl

import (
	"strings"
	"testing"
)

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

func TestOpenS3(t *testing.T) {
	t.Setenv("SPONSON_STATE_KEY", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
	st, shown, err := Open("s3://bucket/team?endpoint=http://127.0.0.1:9", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if shown != "s3://bucket/team/?endpoint=http%3A%2F%2F127.0.0.1%3A9" {
		t.Errorf("shown = %q", shown)
	}
	if _, _, err := Open("s3://KEY:hunter2@bucket/team", t.TempDir()); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("s3 URL with credentials: %v", err)
	}
}

func TestOpenGCS(t *testing.T) {
	t.Setenv("SPONSON_STATE_KEY", "")
	st, shown, err := Open("gs://bucket/team", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if shown != "gs://bucket/team/" {
		t.Errorf("shown = %q", shown)
	}
	if _, _, err := Open("gs://KEY:hunter2@bucket/team", t.TempDir()); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("gs URL with credentials: %v", err)
	}
}

func TestOpenAzblob(t *testing.T) {
	t.Setenv("SPONSON_STATE_KEY", "")
	st, shown, err := Open("azblob://acct/c/team", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if shown != "azblob://acct/c/team/" {
		t.Errorf("shown = %q", shown)
	}
	if _, _, err := Open("azblob://KEY:hunter2@acct/c/team", t.TempDir()); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("azblob URL with credentials: %v", err)
	}
}
