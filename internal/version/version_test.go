package version

import "testing"

func TestFromModule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ stamped, module, want string }{
		{fallback, "v0.2.0", "0.2.0"},                                      // go install ...@v0.2.0
		{fallback, "(devel)", fallback},                                    // go build in a checkout without VCS data
		{fallback, "", fallback},                                           // go test
		{fallback, "v0.0.0-20261201120000-abcdef123456", fallback},         // go install ...@<commit>
		{fallback, "v0.2.1-0.20261201120000-abcdef123456+dirty", fallback}, // a checkout after a tag
		{fallback, "v0.3.0-rc.1", fallback},                                // a pre-release tag: not a release
		{"1.4.0", "v0.2.0", "1.4.0"},                                       // stamped with -ldflags: that wins
		{"0.0.1-snapshot", "v0.2.0", "0.0.1-snapshot"},
	} {
		if got := fromModule(tc.stamped, tc.module); got != tc.want {
			t.Errorf("fromModule(%q, %q) = %q, want %q", tc.stamped, tc.module, got, tc.want)
		}
	}
}
