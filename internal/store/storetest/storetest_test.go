package storetest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t.Parallel()
	c := NewClock()
	start := c.Now()
	c.Advance(time.Hour)
	if got := c.Now().Sub(start); got != time.Hour {
		t.Errorf("fake Advance(1h) moved the clock by %s", got)
	}
	if c.TTL() != DefaultTTL {
		t.Errorf("fake TTL = %s, want %s", c.TTL(), DefaultTTL)
	}

	c.UseWallTime(20 * time.Millisecond)
	if c.TTL() != 20*time.Millisecond {
		t.Errorf("wall TTL = %s, want 20ms", c.TTL())
	}
	if d := time.Since(c.Now()).Abs(); d > time.Second {
		t.Errorf("wall Now is %s away from time.Now", d)
	}
	before := time.Now()
	c.Advance(20 * time.Millisecond)
	if d := time.Since(before); d < 20*time.Millisecond {
		t.Errorf("wall Advance(20ms) returned after %s", d)
	}
}
