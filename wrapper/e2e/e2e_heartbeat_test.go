package e2e_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestE2EHeartbeat (issue 52 item 4): while HashiCorp's time_sleep creates
// for 20 s, the apply's log speaks of it at least every SPONSON_HEARTBEAT
// (1 s here; 30 s by default), whether or not the engine does: OpenTofu's
// machine-readable UI reports a slow create's progress once, so without the
// heartbeat its log went silent until the create ended. In a GitHub Actions
// job the engine's init and plan output are foldable groups, the apply is
// not.
func TestE2EHeartbeat(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	c, _ := newRealChainWorld(t, h, "file")
	c.dir = h.workdir("testdata/cancelsleep")
	env := append(append([]string{}, c.env...), "SPONSON_HEARTBEAT=1s", "GITHUB_ACTIONS=true", "SPONSON_RULES_REF=checkout")
	r := h.run(c.dir, env, append(append([]string{"apply"}, c.where...), "-var", "sleep=20s")...)
	if r.exit != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	log := r.stdout + r.stderr
	beats := regexp.MustCompile(`(?m)^time_sleep\.wait: Still creating\.\.\. \[\d+s elapsed\]$`).FindAllString(log, -1)
	// The engine itself speaks at most once every 10 s (at 10 s); a beat a
	// second gives many more lines over 20 s.
	if len(beats) < 4 {
		t.Errorf("%d lines about the sleep in flight over 20 s, want a heartbeat every second:\n%s", len(beats), log)
	}
	if !strings.Contains(log, "time_sleep.wait: Creation complete") {
		t.Errorf("the sleep's completion is not in the log:\n%s", log)
	}
	for _, group := range []string{"::group::engine init\n", "::group::engine plan\n"} {
		if !strings.Contains(log, group) {
			t.Errorf("no %q in the GitHub Actions log:\n%s", strings.TrimSpace(group), log)
		}
	}
	if strings.Contains(log, "::group::engine apply") {
		t.Errorf("the apply is folded away in the GitHub Actions log:\n%s", log)
	}
	if opened, closed := strings.Count(log, "::group::"), strings.Count(log, "::endgroup::"); opened != closed || opened == 0 {
		t.Errorf("%d groups opened, %d closed", opened, closed)
	}
}

// TestE2EHeartbeatDefault (issue 52 item 4, "the log never goes silent for
// more than 30 s during an apply"): at the default heartbeat (no
// SPONSON_HEARTBEAT), while time_sleep creates for 75 s, every line about
// it carries the time since its create started, and those marks step by at
// most 30 s from the start (0 s, "Creating...") to the completion ("Creation
// complete after 1m15s"). The marks are the clocks of the product (the
// heartbeat's) and of the engine (its own progress lines and the
// completion), never the test's, so a slow machine slows both alike: the
// check is that nothing in flight goes unspoken of for longer than the
// interval. On OpenTofu, whose stream reports progress once (at 10 s), the
// heartbeat speaks for the rest; on Terraform the engine's own lines do.
func TestE2EHeartbeatDefault(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	c, _ := newRealChainWorld(t, h, "file")
	c.dir = h.workdir("testdata/cancelsleep")
	// Empty is the default (engine.DefaultHeartbeat), whatever the test's
	// own environment says.
	env := append(append([]string{}, c.env...), "SPONSON_HEARTBEAT=")
	r := h.run(c.dir, env, append(append([]string{"apply"}, c.where...), "-var", "sleep=75s")...)
	if r.exit != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	log := r.stdout + r.stderr
	marks, err := heartbeatMarks(log, "time_sleep.wait")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	t.Logf("the lines about the sleep, by time since its create started: %v", marks)
	const limit = 30 * time.Second
	if last := marks[len(marks)-1]; last < 75*time.Second {
		t.Errorf("the create completed after %s, want at least the 75 s it sleeps", last)
	}
	for i := 1; i < len(marks); i++ {
		if step := marks[i] - marks[i-1]; step > limit {
			t.Errorf("nothing spoke of the sleep in flight from %s to %s (%s), want a line at least every %s; marks %v:\n%s", marks[i-1], marks[i], step, limit, marks, log)
		}
		if marks[i] < marks[i-1] {
			t.Errorf("the marks go back from %s to %s: %v", marks[i-1], marks[i], marks)
		}
	}
	// 75 s at most 30 s apart: at least two lines in flight between the
	// start and the completion.
	if len(marks) < 4 {
		t.Errorf("marks %v: want the start, at least two lines in flight and the completion:\n%s", marks, log)
	}
}

// heartbeatMarks returns, in the order of the log, the time since the
// change of addr started that each line about it gives: 0 for its
// "Creating...", the elapsed mark of each "Still creating... [1m5s
// elapsed]" (the engine's or the heartbeat's), and the duration of its
// "Creation complete after 1m15s", which must be the last.
func heartbeatMarks(log, addr string) ([]time.Duration, error) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(addr) + `: (Creating\.\.\.|Still creating\.\.\. \[(\S+) elapsed\]|Creation complete after (\S+?))(?: \[.*\])?$`)
	var marks []time.Duration
	started, completed := false, false
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		if completed {
			return nil, fmt.Errorf("%q after the completion", m[0])
		}
		switch {
		case m[1] == "Creating...":
			if started {
				return nil, fmt.Errorf("%s started twice", addr)
			}
			started = true
			marks = append(marks, 0)
			continue
		case !started:
			return nil, fmt.Errorf("%q before the start", m[0])
		}
		v := m[2]
		if v == "" {
			v, completed = m[3], true
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", m[0], err)
		}
		marks = append(marks, d)
	}
	if !completed {
		return nil, fmt.Errorf("no completion of %s in the log", addr)
	}
	return marks, nil
}
