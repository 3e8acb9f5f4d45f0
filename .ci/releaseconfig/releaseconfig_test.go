// Package releaseconfig checks that .goreleaser.yml produces a release the
// Terraform Registry accepts, without building one: goreleaser is a large
// build (about 4 minutes on two cores) and a release needs a signing key.
// The test reads the configuration and renders its name templates the way
// goreleaser does (Go text/template over the same fields), so a change that
// would rename an archive, drop the manifest or stop signing the checksums
// fails here, before a tag is pushed.
//
// It lives under .ci/ because it checks the repository's release files,
// not a package: run it with `go test ./.ci/releaseconfig`.
package releaseconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

const (
	configFile   = "../../.goreleaser.yml"
	manifestFile = "../../terraform-registry-manifest.json"
	mainFile     = "../../main.go"
	projectName  = "terraform-provider-sponson"
	testVersion  = "1.2.3"
)

type config struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID           string     `yaml:"id"`
		Main         string     `yaml:"main"`
		Env          []string   `yaml:"env"`
		Flags        []string   `yaml:"flags"`
		Ldflags      []string   `yaml:"ldflags"`
		Goos         []string   `yaml:"goos"`
		Goarch       []string   `yaml:"goarch"`
		Ignore       []platform `yaml:"ignore"`
		Binary       string     `yaml:"binary"`
		ModTimestamp string     `yaml:"mod_timestamp"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string      `yaml:"name_template"`
		Algorithm    string      `yaml:"algorithm"`
		ExtraFiles   []extraFile `yaml:"extra_files"`
	} `yaml:"checksum"`
	Signs []struct {
		Artifacts string   `yaml:"artifacts"`
		Args      []string `yaml:"args"`
	} `yaml:"signs"`
	Release struct {
		ExtraFiles []extraFile `yaml:"extra_files"`
	} `yaml:"release"`
}

type platform struct {
	Goos   string `yaml:"goos"`
	Goarch string `yaml:"goarch"`
}

type extraFile struct {
	Glob         string `yaml:"glob"`
	NameTemplate string `yaml:"name_template"`
}

func load(t *testing.T) *config {
	t.Helper()
	b, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	var c config
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", configFile, err)
	}
	return &c
}

// render renders a goreleaser name template with the fields goreleaser
// gives it (those the configuration uses).
func render(t *testing.T, tmpl, goos, goarch string) string {
	t.Helper()
	tp, err := template.New("name").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		t.Fatalf("template %q: %v", tmpl, err)
	}
	var b strings.Builder
	data := map[string]any{
		"ProjectName": projectName, "Version": testVersion, "Os": goos, "Arch": goarch,
		"Env": map[string]string{"GPG_FINGERPRINT": "0123456789ABCDEF"},
	}
	if err := tp.Execute(&b, data); err != nil {
		t.Fatalf("template %q: %v", tmpl, err)
	}
	return b.String()
}

func TestReleaseConfigNames(t *testing.T) {
	t.Parallel()
	c := load(t)
	if c.Version != 2 || c.ProjectName != projectName {
		t.Fatalf("version %d, project_name %q: want 2 and %s (the Registry matches archives by it)", c.Version, c.ProjectName, projectName)
	}
	if len(c.Builds) != 2 || len(c.Archives) != 2 {
		t.Fatalf("want two builds and two archives (the provider, the CLI), got %d and %d", len(c.Builds), len(c.Archives))
	}
	b, a := c.Builds[0], c.Archives[0]
	if b.ID != projectName || !slices.Equal(a.IDs, []string{projectName}) {
		t.Fatalf("the first build is %q and its archive takes %v: want %s in both (the Registry's zips hold the provider alone)", b.ID, a.IDs, projectName)
	}
	if b.Main != "." {
		t.Errorf("build main %q: the Registry's binary is main.go, the provider alone", b.Main)
	}
	if got := render(t, b.Binary, "linux", "amd64"); got != projectName+"_v"+testVersion {
		t.Errorf("binary %q, want %s_v%s (the Registry's name for the binary in the zip)", got, projectName, testVersion)
	}
	if diff := cmp.Diff([]string{"zip"}, a.Formats); diff != "" {
		t.Errorf("archive formats (-want +got):\n%s", diff)
	}

	var platforms []string
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			if slices.Contains(b.Ignore, platform{goos, goarch}) {
				continue
			}
			platforms = append(platforms, goos+"_"+goarch)
			want := fmt.Sprintf("%s_%s_%s_%s", projectName, testVersion, goos, goarch)
			if got := render(t, a.NameTemplate, goos, goarch); got != want {
				t.Errorf("archive of %s/%s is %s.zip, want %s.zip", goos, goarch, got, want)
			}
		}
	}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		if !slices.Contains(platforms, p) {
			t.Errorf("no %s archive; platforms: %v", p, platforms)
		}
	}

	if got := render(t, c.Checksum.NameTemplate, "", ""); got != projectName+"_"+testVersion+"_SHA256SUMS" {
		t.Errorf("checksum file %q, want %s_%s_SHA256SUMS", got, projectName, testVersion)
	}
	if c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum algorithm %q, want sha256", c.Checksum.Algorithm)
	}
	manifest := projectName + "_" + testVersion + "_manifest.json"
	for what, files := range map[string][]extraFile{"checksum": c.Checksum.ExtraFiles, "release": c.Release.ExtraFiles} {
		ok := slices.ContainsFunc(files, func(f extraFile) bool {
			return f.Glob == "terraform-registry-manifest.json" && render(t, f.NameTemplate, "", "") == manifest
		})
		if !ok {
			t.Errorf("%s extra_files %+v do not add terraform-registry-manifest.json as %s", what, files, manifest)
		}
	}
}

// TestReleaseConfigCLI: the sponson archives are what install.sh downloads
// (sponson_<version>_<os>_<arch>.tar.gz holding sponson) for exactly the
// platforms it knows, stamped with the version `sponson version` prints.
func TestReleaseConfigCLI(t *testing.T) {
	t.Parallel()
	c := load(t)
	if len(c.Builds) < 2 || len(c.Archives) < 2 {
		t.Fatalf("no sponson build or archive")
	}
	b, a := c.Builds[1], c.Archives[1]
	if b.ID != "sponson" || b.Main != "./wrapper/cmd/sponson" || b.Binary != "sponson" {
		t.Errorf("build %q of %q as %q: want sponson of ./wrapper/cmd/sponson", b.ID, b.Main, b.Binary)
	}
	if !slices.Equal(a.IDs, []string{"sponson"}) || !slices.Equal(a.Formats, []string{"tar.gz"}) {
		t.Errorf("archive of %v as %v: want the sponson build as tar.gz", a.IDs, a.Formats)
	}
	if !slices.Equal(b.Goos, []string{"linux", "darwin"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) || len(b.Ignore) != 0 {
		t.Errorf("platforms %v x %v (ignoring %v): want linux and darwin on amd64 and arm64, the ones install.sh maps", b.Goos, b.Goarch, b.Ignore)
	}
	if got := render(t, a.NameTemplate, "darwin", "arm64"); got != "sponson_"+testVersion+"_darwin_arm64" {
		t.Errorf("archive name %q, want sponson_%s_darwin_arm64 (install.sh builds this name)", got, testVersion)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") || b.ModTimestamp == "" {
		t.Errorf("build env %v, flags %v, mod_timestamp %q: want a static, reproducible build", b.Env, b.Flags, b.ModTimestamp)
	}
	if !strings.Contains(strings.Join(b.Ldflags, " "), "-X github.com/sponson/terraform-provider-sponson/internal/version.Version={{.Version}}") {
		t.Errorf("ldflags %v do not stamp internal/version.Version", b.Ldflags)
	}
}

// TestReleaseConfigSigning: the Registry verifies the checksum file's
// detached GPG signature with the namespace's key, in CI without a prompt.
func TestReleaseConfigSigning(t *testing.T) {
	t.Parallel()
	c := load(t)
	if len(c.Signs) != 1 || c.Signs[0].Artifacts != "checksum" {
		t.Fatalf("signs %+v: want one signature, of the checksum file", c.Signs)
	}
	args := c.Signs[0].Args
	for _, want := range []string{"--batch", "--detach-sign", "${signature}", "${artifact}"} {
		if !slices.Contains(args, want) {
			t.Errorf("sign args %v lack %s", args, want)
		}
	}
	i := slices.Index(args, "--local-user")
	if i < 0 || i+1 >= len(args) || render(t, args[i+1], "", "") != "0123456789ABCDEF" {
		t.Errorf("sign args %v: want --local-user {{ .Env.GPG_FINGERPRINT }}", args)
	}
}

// TestReleaseConfigBuild: the build is static, reproducible, and stamps
// the version into the variable main.go really has.
func TestReleaseConfigBuild(t *testing.T) {
	t.Parallel()
	b := load(t).Builds[0]
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") || b.ModTimestamp == "" {
		t.Errorf("build env %v, flags %v, mod_timestamp %q: want a static, reproducible build", b.Env, b.Flags, b.ModTimestamp)
	}
	src, err := os.ReadFile(mainFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`-X main\.(\w+)=`).FindAllStringSubmatch(strings.Join(b.Ldflags, " "), -1) {
		// The linker ignores -X of a missing variable, silently.
		if !regexp.MustCompile(`(?m)^var ` + m[1] + ` = `).Match(src) {
			t.Errorf("ldflags set main.%s, which main.go does not declare", m[1])
		}
	}
	if !strings.Contains(strings.Join(b.Ldflags, " "), "-X main.version={{.Version}}") {
		t.Errorf("ldflags %v do not stamp main.version", b.Ldflags)
	}
}

func TestReleaseConfigManifest(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", manifestFile, err)
	}
	if m.Version != 1 || !slices.Equal(m.Metadata.ProtocolVersions, []string{"6.0"}) {
		t.Errorf("manifest %+v: want version 1 and protocol_versions [6.0], the provider's plugin protocol", m)
	}
}
