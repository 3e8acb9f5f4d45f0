package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var valid = []platform{
	{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "386"}, {"linux", "arm"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"freebsd", "amd64"}, {"freebsd", "386"}, {"freebsd", "arm"}, {"freebsd", "arm64"},
}

func TestTargetsLeaveOutIgnoredAndUnknownPlatforms(t *testing.T) {
	b := build{
		Goos:   []string{"linux", "darwin"},
		Goarch: []string{"amd64", "386", "arm"},
		Ignore: []platform{{"darwin", "386"}},
	}
	// darwin/arm is no Go platform; darwin/386 is ignored.
	want := []platform{{"linux", "amd64"}, {"linux", "386"}, {"linux", "arm"}, {"darwin", "amd64"}}
	if got := b.targets(valid); !slices.Equal(got, want) {
		t.Fatalf("targets = %v, want %v", got, want)
	}
}

// The repository's own configuration, narrowed to linux/amd64: every build
// names that one platform and nothing else, and every other key and value
// is kept (goreleaser reads the narrowed file in CI's release check).
func TestHostConfigNarrowsEveryBuild(t *testing.T) {
	data, err := os.ReadFile("../../.goreleaser.yml")
	if err != nil {
		t.Fatal(err)
	}
	host := platform{"linux", "amd64"}
	narrowed, err := hostConfig(data, host, valid)
	if err != nil {
		t.Fatal(err)
	}
	var before, after map[string]any
	if err := yaml.Unmarshal(data, &before); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(narrowed, &after); err != nil {
		t.Fatal(err)
	}
	builds := after["builds"].([]any)
	if len(builds) != len(before["builds"].([]any)) || len(builds) < 2 {
		t.Fatalf("narrowed config has %d builds, want those of .goreleaser.yml", len(builds))
	}
	for i, b := range builds {
		bm, orig := b.(map[string]any), before["builds"].([]any)[i].(map[string]any)
		if got := bm["goos"]; !slices.Equal(strs(got), []string{"linux"}) {
			t.Errorf("build %v: goos %v, want [linux]", bm["id"], got)
		}
		if got := bm["goarch"]; !slices.Equal(strs(got), []string{"amd64"}) {
			t.Errorf("build %v: goarch %v, want [amd64]", bm["id"], got)
		}
		if ig, ok := bm["ignore"]; ok && len(ig.([]any)) != 0 {
			t.Errorf("build %v: ignore %v, want none", bm["id"], ig)
		}
		for k, v := range orig {
			if k == "goos" || k == "goarch" || k == "ignore" {
				continue
			}
			if yamlString(t, bm[k]) != yamlString(t, v) {
				t.Errorf("build %v: %s changed from %v to %v", bm["id"], k, v, bm[k])
			}
		}
	}
	for k, v := range before {
		if k != "builds" && yamlString(t, after[k]) != yamlString(t, v) {
			t.Errorf("%s changed", k)
		}
	}
}

func TestHostConfigRefusesABuildWithoutTheHost(t *testing.T) {
	data := []byte("builds:\n  - id: cli\n    goos: [linux]\n    goarch: [amd64]\n")
	_, err := hostConfig(data, platform{"darwin", "arm64"}, valid)
	if err == nil || !strings.Contains(err.Error(), `build "cli" does not build for darwin/arm64`) {
		t.Fatalf("err = %v, want the build named", err)
	}
}

func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func yamlString(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
