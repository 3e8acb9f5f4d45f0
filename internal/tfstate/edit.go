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
	rs := d.Resources()
	from, to := resourceAt(rs, src), resourceAt(rs, dst)
	if from == nil {
		return nil, errcode.New(errcode.Usage, "no resource of the state is %s", src).WithHint("Run `sponson state list` for the addresses.")
	}
	if !src.HasKey {
		return renameResource(from, to, src, dst)
	}
	return d.moveInstance(rs, from, to, src, dst)
}

// resourceAt is the resource of rs at a, whatever a's key; nil if none
// (the last, were there two).
func resourceAt(rs []map[string]any, a Addr) map[string]any {
	a.Key, a.HasKey = nil, false
	var found map[string]any
	for _, r := range rs {
		if resourceAddr(r) == a {
			found = r
		}
	}
	return found
}

// renameResource moves the whole resource from (at src) to dst, which must
// not be in the state: its instances keep their keys.
func renameResource(from, to map[string]any, src, dst Addr) (map[string]string, error) {
	if to != nil {
		return nil, errcode.New(errcode.Usage, "%s is in the state already", dst)
	}
	moved := map[string]string{}
	for _, inst := range instancesOf(from) {
		a, b := src, dst
		a.Key, a.HasKey = inst["index_key"]
		b.Key, b.HasKey = a.Key, a.HasKey
		moved[a.String()] = b.String()
	}
	setResourceAddr(from, dst)
	return moved, nil
}

// moveInstance moves the instance src out of from into to (the resource at
// dst, made as a copy of from without instances when the state has none),
// and drops from if it is left without an instance.
func (d Doc) moveInstance(rs []map[string]any, from, to map[string]any, src, dst Addr) (map[string]string, error) {
	inst, left := takeInstance(from, src)
	if inst == nil {
		return nil, errcode.New(errcode.Usage, "no instance of the state is %s", src).WithHint("Run `sponson state list` for the addresses.")
	}
	if to != nil && hasInstance(to, dst) {
		return nil, errcode.New(errcode.Usage, "%s is in the state already", dst)
	}
	inst["index_key"] = dst.Key
	if to == nil {
		to = emptyCopy(from, dst)
		rs = append(rs, to)
	}
	if to["name"] == from["name"] && to["module"] == from["module"] {
		// A new key in the same resource: from and to are one.
		from["instances"] = append(left, inst)
	} else {
		list, _ := to["instances"].([]any)
		to["instances"] = append(list, inst)
		from["instances"] = left
	}
	d.SetResources(withInstances(rs))
	return map[string]string{src.String(): dst.String()}, nil
}

// takeInstance finds the first instance of r that src matches, and the
// instances left without it; r is not changed, so that a refused move
// leaves the document as it was.
func takeInstance(r map[string]any, src Addr) (inst map[string]any, left []any) {
	for _, i := range instancesOf(r) {
		a := src
		a.Key, a.HasKey = i["index_key"]
		if Matches(src, a) && inst == nil {
			inst = i
			continue
		}
		left = append(left, i)
	}
	return inst, left
}

// hasInstance reports whether r has an instance at a.
func hasInstance(r map[string]any, a Addr) bool {
	for _, i := range instancesOf(r) {
		b := a
		b.Key, b.HasKey = i["index_key"]
		if Matches(a, b) {
			return true
		}
	}
	return false
}

// emptyCopy is a resource like r (its type, provider, mode) at a, without
// instances.
func emptyCopy(r map[string]any, a Addr) map[string]any {
	c := map[string]any{}
	for k, v := range r {
		c[k] = v
	}
	setResourceAddr(c, a)
	c["instances"] = []any{}
	return c
}

// setResourceAddr gives r a's module and name; no module is the root.
func setResourceAddr(r map[string]any, a Addr) {
	if a.Module == "" {
		delete(r, "module")
	} else {
		r["module"] = a.Module
	}
	r["name"] = a.Name
}

// withInstances is rs without the resources left with no instance.
func withInstances(rs []map[string]any) []map[string]any {
	var keep []map[string]any
	for _, r := range rs {
		if len(instancesOf(r)) > 0 {
			keep = append(keep, r)
		}
	}
	return keep
}

// Put adds the managed instance a (attributes at schema version schema)
// to the document, under the resource a names, which it creates (with
// the provider's configuration provider["SOURCE"]) when the document
// lacks it. An instance already at a is an error.
func (d Doc) Put(a Addr, source string, schema int, attributes map[string]any) error {
	if a.Mode != "managed" || a.Type == "" {
		return fmt.Errorf("%s is not a managed resource instance", a)
	}
	inst := map[string]any{"schema_version": schema, "attributes": attributes, "sensitive_attributes": []any{}}
	if a.HasKey {
		inst["index_key"] = a.Key
	}
	rs := d.Resources()
	r := resourceAt(rs, a)
	if r == nil {
		r = map[string]any{"mode": a.Mode, "type": a.Type, "name": a.Name, "provider": `provider["` + source + `"]`, "instances": []any{}}
		if a.Module != "" {
			r["module"] = a.Module
		}
		rs = append(rs, r)
	}
	if hasInstance(r, a) {
		return fmt.Errorf("%s is in the state already", a)
	}
	list, _ := r["instances"].([]any)
	r["instances"] = append(list, inst)
	d.SetResources(rs)
	return nil
}
