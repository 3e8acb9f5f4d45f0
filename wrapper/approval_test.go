package wrapper

import (
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// Every command that changes what a protected environment owns outside a
// plan takes --approved-by and says so in its help; the readers take none.
func TestEditCommandsTakeAnApprover(t *testing.T) {
	t.Parallel()
	f, _, _ := testFactory(nil)
	root := NewCmdRoot(f, &cmdutil.Outcome{})
	for _, path := range [][]string{{"state", "rm"}, {"state", "mv"}, {"state", "push"}, {"import"}, {"resolve"}, {"adopt"}, {"unlock"}, {"force-unlock"}} {
		cmd, _, err := root.Find(path)
		if err != nil || cmd.Name() != path[len(path)-1] {
			t.Fatalf("%v: %v", path, err)
		}
		fl := cmd.Flags().Lookup("approved-by")
		if fl == nil || !strings.Contains(fl.Usage, "SPONSON_APPROVED_BY") || !strings.Contains(fl.Usage, "protected environment") {
			t.Errorf("sponson %s: --approved-by %+v", strings.Join(path, " "), fl)
		}
		if !strings.Contains(cmd.Long, "--approved-by") && cmd.Parent().Name() != "state" {
			t.Errorf("sponson %s: its help does not say when it needs --approved-by", strings.Join(path, " "))
		}
	}
	for _, path := range [][]string{{"state", "list"}, {"state", "show"}, {"state", "pull"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if cmd.Flags().Lookup("approved-by") != nil {
			t.Errorf("sponson %s only reads, and takes --approved-by", strings.Join(path, " "))
		}
	}
}

// editApproval: the flag, else SPONSON_APPROVED_BY; in production one is
// needed (ENV_NOT_APPROVED naming the command), in preview none is
// recorded.
func TestEditApproval(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, env, flag, variable, want string
		refused                         bool
	}{
		{name: "production, none", env: "production", refused: true},
		{name: "production, the flag", env: "production", flag: "alice", variable: "bob", want: "alice"},
		{name: "production, the variable", env: "Production", variable: " bob ", want: "bob"},
		{name: "preview records none", env: "preview", flag: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, _, _ := testFactory(map[string]string{"SPONSON_APPROVED_BY": tc.variable})
			a, err := cmdutil.EditApproval(f.Getenv, dir, tc.env, "state mv", tc.flag)
			if tc.refused {
				if !errcode.Is(err, errcode.EnvNotApproved) || !strings.HasPrefix(errcode.As(err).Message, "state mv: ") {
					t.Fatalf("editApproval: %v, want ENV_NOT_APPROVED naming state mv", err)
				}
				return
			}
			if err != nil || a.By() != tc.want {
				t.Fatalf("editApproval: %q, %v; want %q", a.By(), err, tc.want)
			}
		})
	}
}
