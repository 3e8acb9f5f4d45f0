// Package verify proves, on a throwaway prefix, that an object store honours
// what fencing needs before a team trusts it (issue 51 item 3; the command
// that runs it is `sponson store verify`, wrapper/storecmd): create-if-absent refused when the object
// exists, a write on a stale version refused, one winner among racing
// writers, and a conditional delete refused on a stale version. Every
// property is checked on its own objects; everything written is removed at
// the end, whatever the outcome, and the prefix is listed to prove it empty.
//
// A store offers the check through Objects, the two conditional operations
// of its backend on raw keys (a write, a delete) with the backend's own
// version token (an S3 ETag, a GCS generation), and an unconditional removal
// and a listing; the check builds its creates and replaces on the write
// once, and the refusal of an empty version with them, so a store that
// answers without a version is never sent a replace that would mean "only
// if absent".
// Each request is made once, never retried, so a retry cannot hide a
// refusal. The file, git and PostgreSQL stores offer no Objects: their
// fencing is the file lock, the ref's compare-and-swap and the row lock,
// which the conformance suite proves (`store verify` refuses them with
// USAGE). wrapper/e2e/e2e_storeverify_test.go runs the check against every
// emulator and through a proxy that strips the conditions. NotConforming is
// the error the object stores' opening paths return when their server
// accepted a create of an object that exists.
package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// ErrConflict is what Objects returns when a condition did not hold: the
// object exists (a write without a version), or its version is not the one
// given (a write or a delete with one).
var ErrConflict = errors.New("condition not met")

// Objects is the part of a backend the check needs, on keys under the
// check's prefix.
type Objects interface {
	// Write writes key and returns its new version: only if it does not
	// exist when ifMatch is "", otherwise only if its version is still
	// ifMatch.
	Write(ctx context.Context, key string, data []byte, ifMatch string) (version string, err error)
	// DeleteIf removes key only if its version is still version (never "").
	DeleteIf(ctx context.Context, key, version string) error
	// Remove removes key whatever its version; a missing key is no error.
	Remove(ctx context.Context, key string) error
	// List returns the keys under prefix.
	List(ctx context.Context, prefix string) ([]string, error)
}

// NotConforming is the STORE_NOT_CONFORMING error of a store whose server
// accepted a create of an object that exists: kind names the store ("S3"),
// display its URL as the user gave it, object the object written (its URL)
// and condition the condition the server ignored ("If-None-Match: *").
func NotConforming(kind, display, object, condition string) error {
	return errcode.New(errcode.StoreNotConforming, "the server of the %s store %s accepted a create of an object that exists (%s, %s): it ignores the condition that keeps two runs from both taking a new scope's lease, so the store refuses to write on it", kind, display, object, condition).
		With("store", display).
		WithHint("Run `sponson store verify --store " + display + "` to see which conditions the server ignores; use a server that honours them (AWS S3, GCS, Azure, versitygw) or another store.")
}

// Property is one result of the check.
type Property struct {
	Name   string // e.g. "create-if-absent"
	OK     bool
	Detail string // what was seen, in a sentence
}

// Report is the check's outcome, one Property per property, in order.
type Report struct {
	Prefix     string
	Properties []Property
	// Leftover lists keys the check could not remove: those whose removal
	// failed, and any the listing of the prefix still shows afterwards (or
	// the prefix itself when it could not be listed).
	Leftover []string
}

// OK reports whether every property held and nothing was left behind.
func (r Report) OK() bool {
	for _, p := range r.Properties {
		if !p.OK {
			return false
		}
	}
	return len(r.Leftover) == 0
}

// Run checks o on a fresh prefix under base ("" or ending in "/"), with
// writers racing writers (at least 2). An error is returned only when the
// store could not be used at all (the first write failed for another
// reason than a condition); a property that does not hold is in the report.
func Run(ctx context.Context, o Objects, base string, writers int) (r Report, err error) {
	writers = max(writers, 2)
	r = Report{Prefix: base + ".sponson-verify-" + token() + "/"}
	c := &checker{o: o, prefix: r.Prefix}
	// r is the named result, so the cleanup's findings reach the caller.
	defer func() { r.Leftover = c.cleanup(context.WithoutCancel(ctx)) }()

	p, err := c.createIfAbsent(ctx)
	if err != nil {
		return r, err
	}
	r.Properties = append(r.Properties, p, c.staleReplace(ctx), c.race(ctx, writers), c.staleDelete(ctx))
	return r, nil
}

type checker struct {
	o      Objects
	prefix string
	mu     sync.Mutex
	keys   map[string]bool
}

func (c *checker) key(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = map[string]bool{}
	}
	k := c.prefix + name
	c.keys[k] = true
	return k
}

// create writes key only if it does not exist.
func (c *checker) create(ctx context.Context, key string, data []byte) (string, error) {
	return c.o.Write(ctx, key, data, "")
}

// replace writes key only if its version is still version. An empty version
// (a server that answered a write with none) is refused before a request:
// as a write's condition it would mean "only if absent".
func (c *checker) replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	if version == "" {
		return "", ErrConflict
	}
	return c.o.Write(ctx, key, data, version)
}

// deleteIf removes key only if its version is still version; an empty
// version is refused before a request, as it is by replace.
func (c *checker) deleteIf(ctx context.Context, key, version string) error {
	if version == "" {
		return ErrConflict
	}
	return c.o.DeleteIf(ctx, key, version)
}

func (c *checker) cleanup(ctx context.Context) []string {
	left := map[string]bool{}
	for k := range c.keys {
		if err := c.o.Remove(ctx, k); err != nil {
			left[k] = true
		}
	}
	listed, err := c.o.List(ctx, c.prefix)
	if err != nil {
		left[c.prefix] = true
	}
	for _, k := range listed {
		left[k] = true
	}
	return slices.Sorted(maps.Keys(left))
}

// createIfAbsent: a second create of an existing object is refused and
// leaves the first body.
func (c *checker) createIfAbsent(ctx context.Context) (Property, error) {
	p := Property{Name: "create-if-absent"}
	k := c.key("create")
	if _, err := c.create(ctx, k, []byte("first")); err != nil {
		return p, fmt.Errorf("the first write of the check failed: %w", err)
	}
	_, err := c.create(ctx, k, []byte("second"))
	switch {
	case errors.Is(err, ErrConflict):
		p.OK, p.Detail = true, "a create of an existing object was refused"
	case err == nil:
		p.Detail = "a create of an existing object was accepted: the server ignores create-if-absent, and two runs could both take a new scope's lease"
	default:
		p.Detail = "a create of an existing object failed for another reason: " + err.Error()
	}
	return p, nil
}

// staleReplace: a write on the version before the current one is refused.
func (c *checker) staleReplace(ctx context.Context) Property {
	p := Property{Name: "stale-version-refused"}
	k := c.key("replace")
	v1, err := c.create(ctx, k, []byte("v1"))
	if err != nil {
		p.Detail = "could not write the object: " + err.Error()
		return p
	}
	v2, err := c.replace(ctx, k, []byte("v2"), v1)
	if err != nil {
		p.Detail = "a write on the current version failed: " + err.Error()
		return p
	}
	if v2 == v1 {
		p.Detail = "a write did not change the object's version"
		return p
	}
	_, err = c.replace(ctx, k, []byte("v3"), v1)
	switch {
	case errors.Is(err, ErrConflict):
		p.OK, p.Detail = true, "a write on a stale version was refused"
	case err == nil:
		p.Detail = "a write on a stale version was accepted: the server ignores the condition, and a run that lost its lease could still write"
	default:
		p.Detail = "a write on a stale version failed for another reason: " + err.Error()
	}
	return p
}

// race: writers replace one object at once, each on the same version: one
// wins, the others are refused.
func (c *checker) race(ctx context.Context, writers int) Property {
	p := Property{Name: "one-winner"}
	k := c.key("race")
	v, err := c.create(ctx, k, []byte("start"))
	if err != nil {
		p.Detail = "could not write the object: " + err.Error()
		return p
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = c.replace(ctx, k, fmt.Appendf(nil, "writer %d", i), v)
		}()
	}
	close(start)
	wg.Wait()
	won, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, ErrConflict):
			refused++
		}
	}
	p.OK = won == 1 && refused == writers-1
	p.Detail = fmt.Sprintf("%d writers on one version: %d won, %d were refused, %d failed otherwise", writers, won, refused, writers-won-refused)
	return p
}

// staleDelete: a delete on a stale version is refused and the object stays.
func (c *checker) staleDelete(ctx context.Context) Property {
	p := Property{Name: "conditional-delete"}
	k := c.key("delete")
	v1, err := c.create(ctx, k, []byte("v1"))
	if err != nil {
		p.Detail = "could not write the object: " + err.Error()
		return p
	}
	if _, err := c.replace(ctx, k, []byte("v2"), v1); err != nil {
		p.Detail = "a write on the current version failed: " + err.Error()
		return p
	}
	err = c.deleteIf(ctx, k, v1)
	switch {
	case errors.Is(err, ErrConflict):
		p.OK, p.Detail = true, "a delete on a stale version was refused"
	case err == nil:
		p.Detail = "a delete on a stale version was accepted: the server ignores delete conditions"
	default:
		p.Detail = "a delete on a stale version failed for another reason: " + err.Error()
	}
	return p
}

func token() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes instead
	return hex.EncodeToString(b[:])
}
