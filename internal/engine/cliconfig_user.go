package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// UserCLIConfig returns the CLI configuration files the engine binary reads
// on its own, in the order it reads them: their provider_installation and
// plugin_cache_dir decide what init installs, so the init stamp covers them
// (docs/design.md §8). The locations are the engines' documented ones
// (checked against their sources, OpenTofu 1.12 and Terraform 1.13):
//
//   - TF_CLI_CONFIG_FILE, or the older TERRAFORM_CONFIG, alone when set;
//   - else the main file: Terraform ~/.terraformrc; OpenTofu ~/.tofurc, or
//     ~/.terraformrc when only that exists, or $XDG_CONFIG_HOME/opentofu/tofurc
//     when neither exists and XDG_CONFIG_HOME is set (on Windows
//     %APPDATA%/terraform.rc, or tofu.rc for OpenTofu);
//   - then every *.tfrc of the configuration directory, by name: ~/.terraform.d
//     (OpenTofu: $XDG_CONFIG_HOME/opentofu when ~/.terraform.d does not exist).
//
// The configuration directory's *.tfrc.json files are returned in json,
// except credentials.tfrc.json, which holds only credentials.
func UserCLIConfig(binary string, getenv func(string) string) (files, json []string) {
	if p := getenv("TF_CLI_CONFIG_FILE"); p != "" {
		return []string{p}, nil
	}
	if p := getenv("TERRAFORM_CONFIG"); p != "" {
		return []string{p}, nil
	}
	main, dir, ok := userCLIPlaces(strings.Contains(filepath.Base(binary), "tofu"), getenv)
	if !ok {
		return nil, nil
	}
	if configExists(main) {
		files = append(files, main)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return files, nil
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, ".tfrc"):
			files = append(files, filepath.Join(dir, n))
		case strings.HasSuffix(n, ".tfrc.json") && n != "credentials.tfrc.json":
			json = append(json, filepath.Join(dir, n))
		}
	}
	return files, json
}

// userCLIPlaces is where the engine looks for its main CLI configuration
// file and its configuration directory (UserCLIConfig's list); ok is false
// without a home directory, where it looks nowhere.
func userCLIPlaces(tofu bool, getenv func(string) string) (main, dir string, ok bool) {
	home, xdg := getenv("HOME"), getenv("XDG_CONFIG_HOME")
	switch {
	case runtime.GOOS == "windows":
		appData := getenv("APPDATA")
		main, dir = filepath.Join(appData, "terraform.rc"), filepath.Join(appData, "terraform.d")
		if tofu && (configExists(filepath.Join(appData, "tofu.rc")) || !configExists(main)) {
			main = filepath.Join(appData, "tofu.rc")
		}
		return main, dir, true
	case home == "":
		return "", "", false
	case !tofu:
		return filepath.Join(home, ".terraformrc"), filepath.Join(home, ".terraform.d"), true
	}
	legacy, current := filepath.Join(home, ".terraformrc"), filepath.Join(home, ".tofurc")
	switch {
	case xdg != "" && !configExists(legacy) && !configExists(current):
		main = filepath.Join(xdg, "opentofu", "tofurc")
	case configExists(legacy) && !configExists(current):
		main = legacy
	default:
		main = current
	}
	dir = filepath.Join(home, ".terraform.d")
	if xdg != "" && !configExists(dir) {
		dir = filepath.Join(xdg, "opentofu")
	}
	return main, dir, true
}

func configExists(p string) bool { _, err := os.Stat(p); return err == nil }

// MissingCLIConfig stands in for a CLI configuration file the user names
// (TF_CLI_CONFIG_FILE, or TERRAFORM_CONFIG) that does not exist. The engine
// then reads no configuration, as it would, but it also prints a warning on
// every command, on stdout, where it breaks `show -json` and `state pull`.
// So the engine is given an empty file in dir instead, which configures the
// same nothing, and the warning is said once (warning). env is what to add
// to the engine's environment; both are empty when nothing is missing.
func MissingCLIConfig(dir string, getenv func(string) string) (env []string, warning string, err error) {
	name := "TF_CLI_CONFIG_FILE"
	p := getenv(name)
	if p == "" {
		name, p = "TERRAFORM_CONFIG", getenv("TERRAFORM_CONFIG")
	}
	if p == "" {
		return nil, "", nil
	}
	if _, err := os.Stat(p); err == nil || !os.IsNotExist(err) {
		return nil, "", nil
	}
	empty := filepath.Join(dir, "empty.tfrc")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		return nil, "", err
	}
	return []string{"TF_CLI_CONFIG_FILE=" + empty},
		fmt.Sprintf("%s names %s, which does not exist: the engine runs with no CLI configuration", name, p), nil
}
