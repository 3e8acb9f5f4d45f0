package tfstate

import (
	"fmt"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Matches reports whether the instance at a falls under the target t: t
// names a module (everything in it), a resource (every instance) or one
// instance.
func Matches(t, a Addr) bool {
	if t.Type == "" {
		return a.Module == t.Module || strings.HasPrefix(a.Module, t.Module+".")
	}
	if a.Module != t.Module || a.Mode != t.Mode || a.Type != t.Type || a.Name != t.Name {
		return false
	}
	return !t.HasKey || (a.HasKey && fmt.Sprint(a.Key) == fmt.Sprint(t.Key))
}

// Remove takes every instance that one of targets matches out of the
// document, and every resource left without an instance. It returns the
// addresses removed, each to "" (as Move's result reads); none matched is
// USAGE.
func (d Doc) Remove(targets []Addr) (map[string]string, error) {
	removed := map[string]string{}
	var keep []map[string]any
	for _, r := range d.Resources() {
		base := resourceAddr(r)
		var left []any
		for _, inst := range instancesOf(r) {
			a := base
			a.Key, a.HasKey = inst["index_key"]
			hit := false
			for _, t := range targets {
				hit = hit || Matches(t, a)
			}
			if hit {
				removed[a.String()] = ""
				continue
			}
			left = append(left, inst)
		}
		if len(left) > 0 {
			r["instances"] = left
			keep = append(keep, r)
		}
	}
	if len(removed) == 0 {
		names := make([]string, len(targets))
		for i, t := range targets {
			names[i] = t.String()
		}
		return nil, errcode.New(errcode.Usage, "no instance of the state matches %s", strings.Join(names, " ")).
			WithHint("Run `sponson state list` for the addresses.")
	}
	d.SetResources(keep)
	return removed, nil
}

// Move renames the resource src to dst (both without a key), or moves the
// instance src to the instance dst. It returns the instance addresses that
// moved, each to its new address.
func (d Doc) Move(src, dst Addr) (map[string]string, error) {
	moved := map[string]string{}
	rs := d.Resources()
	var from, to map[string]any
	for _, r := range rs {
		a := resourceAddr(r)
		a.Key, a.HasKey = nil, false
		s, d := src, dst
		s.Key, s.HasKey, d.Key, d.HasKey = nil, false, nil, false
		if a == s {
			from = r
		}
		if a == d {
			to = r
		}
	}
	if from == nil {
		return nil, errcode.New(errcode.Usage, "no resource of the state is %s", src).WithHint("Run `sponson state list` for the addresses.")
	}
	setAddr := func(r map[string]any, a Addr) {
		if a.Module == "" {
			delete(r, "module")
		} else {
			r["module"] = a.Module
		}
		r["name"] = a.Name
	}
	if !src.HasKey {
		if to != nil {
			return nil, errcode.New(errcode.Usage, "%s is in the state already", dst)
		}
		for _, inst := range instancesOf(from) {
			a, b := src, dst
			a.Key, a.HasKey = inst["index_key"]
			b.Key, b.HasKey = a.Key, a.HasKey
			moved[a.String()] = b.String()
		}
		setAddr(from, dst)
		return moved, nil
	}
	var inst map[string]any
	var left []any
	for _, i := range instancesOf(from) {
		a := src
		a.Key, a.HasKey = i["index_key"]
		if Matches(src, a) && inst == nil {
			inst = i
			continue
		}
		left = append(left, i)
	}
	if inst == nil {
		return nil, errcode.New(errcode.Usage, "no instance of the state is %s", src).WithHint("Run `sponson state list` for the addresses.")
	}
	if to != nil {
		for _, i := range instancesOf(to) {
			a := dst
			a.Key, a.HasKey = i["index_key"]
			if Matches(dst, a) {
				return nil, errcode.New(errcode.Usage, "%s is in the state already", dst)
			}
		}
	}
	inst["index_key"] = dst.Key
	if to == nil {
		to = map[string]any{}
		for k, v := range from {
			to[k] = v
		}
		setAddr(to, dst)
		to["instances"] = []any{}
		rs = append(rs, to)
	}
	if to["name"] == from["name"] && to["module"] == from["module"] {
		left = append(left, inst)
		from["instances"] = left
	} else {
		list, _ := to["instances"].([]any)
		to["instances"] = append(list, inst)
		from["instances"] = left
	}
	var keep []map[string]any
	for _, r := range rs {
		if len(instancesOf(r)) > 0 {
			keep = append(keep, r)
		}
	}
	d.SetResources(keep)
	moved[src.String()] = dst.String()
	return moved, nil
}
