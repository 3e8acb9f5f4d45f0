package runner

import (
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// TestHeartbeat reads SPONSON_HEARTBEAT: unset is the engine's default,
// off or 0 none, a duration of a second or more itself; anything else is
// refused before the run starts.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 0, "off": -1, "0": -1, "2m": 2 * time.Minute, " 45s ": 45 * time.Second} {
		got, err := heartbeat(func(string) string { return v })
		if err != nil || got != want {
			t.Errorf("SPONSON_HEARTBEAT=%q: %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"soon", "500ms", "-5s"} {
		if _, err := heartbeat(func(string) string { return v }); errcode.As(err).Code != errcode.Usage {
			t.Errorf("SPONSON_HEARTBEAT=%q: %v, want USAGE", v, err)
		}
	}
}
