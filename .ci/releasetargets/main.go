// Command releasetargets lets CI check a release without compiling it for
// every platform (issue 47 item 5: a cold CI run spent 1,028 s, a third of
// its time, compiling the whole dependency graph once per release target).
//
//	go run ./.ci/releasetargets host-config FILE
//		writes .goreleaser.yml to FILE with every build narrowed to this
//		machine's GOOS and GOARCH: the snapshot release CI builds, installs
//		and runs (.ci/release-check.sh);
//	go run ./.ci/releasetargets typecheck
//		type-checks each build's main package and everything it imports,
//		from source, for every other platform the configuration names,
//		with the build's environment and flags (CGO_ENABLED=0, build
//		tags): a file that does not build on freebsd/arm or on darwin is a
//		type error there (a syscall field of another type, a missing
//		function, an untyped constant that overflows a 32-bit int).
//
// Type-checking a platform takes about 4 s on two cores where compiling it
// cold took about 90. What it does not do is the compiler's back end and the link,
// which the release workflow still runs for every platform when a tag is
// pushed; `make release-snapshot` builds them all locally.
//
// It lives under .ci/ because it checks the repository's release files, not
// a package of the product: run it with `go run ./.ci/releasetargets`.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"
	"gopkg.in/yaml.v3"
)

const configFile = ".goreleaser.yml"

// build is the part of a goreleaser build that decides what compiles.
type build struct {
	ID     string     `yaml:"id"`
	Main   string     `yaml:"main"`
	Env    []string   `yaml:"env"`
	Flags  []string   `yaml:"flags"`
	Goos   []string   `yaml:"goos"`
	Goarch []string   `yaml:"goarch"`
	Ignore []platform `yaml:"ignore"`
}

type platform struct {
	Goos   string `yaml:"goos"`
	Goarch string `yaml:"goarch"`
}

func (p platform) String() string { return p.Goos + "/" + p.Goarch }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "releasetargets:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return fmt.Errorf("%w (run it from the repository's root)", err)
	}
	valid, err := goPlatforms()
	if err != nil {
		return err
	}
	switch {
	case len(args) == 2 && args[0] == "host-config":
		narrowed, err := hostConfig(data, platform{runtime.GOOS, runtime.GOARCH}, valid)
		if err != nil {
			return err
		}
		return os.WriteFile(args[1], narrowed, 0o644)
	case len(args) == 1 && args[0] == "typecheck":
		var cfg struct {
			Builds []build `yaml:"builds"`
		}
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("%s: %w", configFile, err)
		}
		return typecheck(cfg.Builds, platform{runtime.GOOS, runtime.GOARCH}, valid)
	default:
		return errors.New("usage: releasetargets host-config FILE | releasetargets typecheck")
	}
}

// targets are the platforms a build names, in the configuration's order,
// less those it ignores and those Go does not build for (valid: `go tool
// dist list`), which goreleaser leaves out the same way (darwin/arm).
func (b build) targets(valid []platform) []platform {
	var out []platform
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			p := platform{goos, goarch}
			if !slices.Contains(b.Ignore, p) && slices.Contains(valid, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// goPlatforms lists the platforms the Go toolchain builds for.
func goPlatforms() ([]platform, error) {
	out, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("go tool dist list: %w", err)
	}
	var ps []platform
	for line := range strings.Lines(string(out)) {
		if goos, goarch, ok := strings.Cut(strings.TrimSpace(line), "/"); ok {
			ps = append(ps, platform{goos, goarch})
		}
	}
	return ps, nil
}

// hostConfig narrows every build of the configuration to host, keeping the
// rest of the file (its comments included) as it is. A build that does not
// name host is an error: its archives could not be checked here.
func hostConfig(data []byte, host platform, valid []platform) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", configFile, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a mapping", configFile)
	}
	builds := value(doc.Content[0], "builds")
	if builds == nil || builds.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: no builds", configFile)
	}
	for _, node := range builds.Content {
		var b build
		if err := node.Decode(&b); err != nil {
			return nil, fmt.Errorf("%s: %w", configFile, err)
		}
		if !slices.Contains(b.targets(valid), host) {
			return nil, fmt.Errorf("%s: build %q does not build for %s, this machine's platform", configFile, b.ID, host)
		}
		for i := 0; i < len(node.Content); i += 2 {
			switch node.Content[i].Value {
			case "goos":
				node.Content[i+1] = list(host.Goos)
			case "goarch":
				node.Content[i+1] = list(host.Goarch)
			case "ignore":
				node.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
			}
		}
	}
	return yaml.Marshal(&doc)
}

func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func list(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}}}
}

// typecheck loads, for each platform other than host, the main packages of
// the builds that name it, with their dependencies parsed and type-checked
// from source, and reports every error. Builds that share a platform are
// loaded together, so each platform's graph is checked once.
func typecheck(builds []build, host platform, valid []platform) error {
	type group struct {
		p      platform
		env    []string
		flags  []string
		mains  []string
		builds []string
	}
	var groups []*group
	for _, b := range builds {
		for _, p := range b.targets(valid) {
			if p == host {
				continue // the snapshot release compiles it
			}
			i := slices.IndexFunc(groups, func(g *group) bool { return g.p == p })
			if i < 0 {
				groups = append(groups, &group{p: p, env: b.Env, flags: b.Flags})
				i = len(groups) - 1
			}
			g := groups[i]
			if !slices.Equal(g.env, b.Env) || !slices.Equal(g.flags, b.Flags) {
				return fmt.Errorf("builds %s and %q build %s with different env or flags; check them apart", strings.Join(g.builds, ", "), b.ID, p)
			}
			g.mains = append(g.mains, "./"+strings.TrimPrefix(b.Main, "./"))
			g.builds = append(g.builds, b.ID)
		}
	}
	failed := 0
	for _, g := range groups {
		start := time.Now()
		env := append(os.Environ(), g.env...)
		env = append(env, "GOOS="+g.p.Goos, "GOARCH="+g.p.Goarch)
		pkgs, err := packages.Load(&packages.Config{
			Mode:       packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedSyntax | packages.NeedTypes,
			Env:        env,
			BuildFlags: g.flags,
		}, g.mains...)
		if err != nil {
			return fmt.Errorf("%s: %w", g.p, err)
		}
		n, errs := 0, 0
		packages.Visit(pkgs, nil, func(p *packages.Package) {
			n++
			for _, e := range p.Errors {
				fmt.Printf("%s: %s\n", g.p, e)
				errs++
			}
		})
		fmt.Printf("-- %-14s %4d packages of %s, %s: ", g.p, n, strings.Join(g.builds, " and "), time.Since(start).Round(100*time.Millisecond))
		if errs > 0 {
			fmt.Printf("%d errors\n", errs)
			failed++
			continue
		}
		fmt.Println("type-checked")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d platforms do not build", failed, len(groups))
	}
	return nil
}
