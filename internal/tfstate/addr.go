package tfstate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Addr is a resource or resource instance address as `sponson state`
// takes it: module.NAME[KEY]... then [data.]TYPE.NAME[KEY], or only modules.
type Addr struct {
	Module string // "module.a.module.b[\"x\"]", "" for the root module
	Mode   string // "managed" or "data"; "" for a module address
	Type   string
	Name   string
	Key    any // nil, float64 or string
	HasKey bool
}

// String renders the address as the engine writes it.
func (a Addr) String() string {
	var parts []string
	if a.Module != "" {
		parts = append(parts, a.Module)
	}
	if a.Type != "" {
		r := a.Type + "." + a.Name
		if a.Mode == "data" {
			r = "data." + r
		}
		parts = append(parts, r+keyText(a.Key, a.HasKey))
	}
	return strings.Join(parts, ".")
}

func keyText(key any, has bool) string {
	if !has {
		return ""
	}
	switch k := key.(type) {
	case float64:
		return "[" + strconv.FormatFloat(k, 'f', -1, 64) + "]"
	case string:
		b, _ := json.Marshal(k)
		return "[" + string(b) + "]"
	}
	return ""
}

// ParseAddr reads an address; keys are numbers or JSON strings.
func ParseAddr(s string) (Addr, error) {
	var a Addr
	rest := s
	var mods []string
	for strings.HasPrefix(rest, "module.") {
		name, key, tail, err := segment(strings.TrimPrefix(rest, "module."))
		if err != nil {
			return a, fmt.Errorf("%q: %w", s, err)
		}
		mods = append(mods, "module."+name+key)
		rest = tail
		if rest == "" {
			a.Module = strings.Join(mods, ".")
			return a, nil
		}
		if !strings.HasPrefix(rest, ".") {
			return a, fmt.Errorf("%q is not an address", s)
		}
		rest = rest[1:]
	}
	a.Module = strings.Join(mods, ".")
	a.Mode = "managed"
	if strings.HasPrefix(rest, "data.") {
		a.Mode, rest = "data", strings.TrimPrefix(rest, "data.")
	}
	typ, tail, ok := strings.Cut(rest, ".")
	if !ok || !identifier(typ) {
		return a, fmt.Errorf("%q is not a resource address (TYPE.NAME)", s)
	}
	name, key, tail, err := segment(tail)
	if err != nil || tail != "" {
		return a, fmt.Errorf("%q is not a resource address (TYPE.NAME[KEY])", s)
	}
	a.Type, a.Name = typ, name
	if key != "" {
		a.HasKey = true
		if err := json.Unmarshal([]byte(key[1:len(key)-1]), &a.Key); err != nil {
			return a, fmt.Errorf("%q: the key %s is neither a number nor a quoted string", s, key)
		}
	}
	return a, nil
}

// segment reads NAME[KEY] at the start of s and returns the rest.
func segment(s string) (name, key, rest string, err error) {
	end := strings.IndexAny(s, ".[")
	if end < 0 {
		end = len(s)
	}
	name, rest = s[:end], s[end:]
	if !identifier(name) {
		return "", "", "", fmt.Errorf("%q is not a name", name)
	}
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if strings.HasPrefix(rest, `["`) {
			// A quoted key may hold "]": find the closing quote first.
			q := strings.Index(rest[2:], `"]`)
			if q < 0 {
				return "", "", "", fmt.Errorf("unterminated key in %q", s)
			}
			end = q + 3
		}
		if end < 0 {
			return "", "", "", fmt.Errorf("unterminated key in %q", s)
		}
		key, rest = rest[:end+1], rest[end+1:]
	}
	return name, key, rest, nil
}

func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
