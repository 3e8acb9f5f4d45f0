package pgstore

import (
	"fmt"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// A stack name is a namespace, not an access control: every role that can
// use the schema reads and writes every stack. PerStackSQL gives one role
// (a repository's CI credentials) its own stacks only, with PostgreSQL's
// row-level security (docs/design.md §5.4, §9): the rows of the stacks its
// prefixes grant, and the environment-wide rows every run needs (the parent
// leases, the intent lease and its records, whose stack is ""). The
// ownership index stays readable whole, since the foreign check reads every
// stack of the environment, but the role writes only its own stacks' rows
// of it. The schema's owner (who migrates it) is not bound by the policies.
//
// Which stacks a role may use is one rule in one place: the table grants
// (role, prefix) and the function stack_granted of schema migration 4. The
// policies call the function; Open reads the role's prefixes in the
// statement it runs anyway (checkOpen), and checkKey applies the same rule
// (Granted) before every operation on a stack. So a role without rights on
// a stack gets STORE_PERMISSION naming the grant to ask for, never the
// empty scope row-level security would show it, at no extra round trip.
//
// An administrator runs the SQL once per role, as the schema's owner, after
// the schema exists (the owner's first run creates it); the README's
// "Stores" section shows it for one repository.

// perStackTables are the tables keyed by stack whose rows a role may read
// and write only for its granted stacks.
var perStackTables = []string{"leases", "receipts", "latest", "states", "records", "quarantine"}

// access is what row-level security lets the connecting role use, as Open
// read it.
type access struct {
	role string
	// bound: row-level security applies to the role (it is neither the
	// tables' owner nor a role that bypasses it) and the tables have it
	// enabled. An unbound role reaches every stack.
	bound    bool
	prefixes []string // the role's rows of grants
}

// GrantPrefix checks a stack prefix for a grant and returns it without
// trailing slashes: a prefix is a stack name or a leading part of one that
// ends at a "/" ("github.com/acme/infra", "github.com/acme"), and grants
// what Granted says.
func GrantPrefix(prefix string) (string, error) {
	p := strings.TrimRight(strings.TrimSpace(prefix), "/")
	if p == "" {
		return "", fmt.Errorf("a role needs a stack prefix: an empty one would reach every stack")
	}
	if err := store.CheckStack(p); err != nil {
		return "", fmt.Errorf("stack prefix %q: %w", prefix, err)
	}
	return p, nil
}

// Granted reports whether prefix grants stack: the stack is the prefix
// itself or lies below it at a path boundary ("github.com/acme/infra"
// grants "github.com/acme/infra//db" and "github.com/acme/infra/x", never
// "github.com/acme/infra-secrets"). The environment-wide stack "" is every
// role's. It is the SQL function stack_granted of schema migration 4, in
// Go; a test holds the two to the same answers.
func Granted(prefixes []string, stack string) bool {
	if stack == "" {
		return true
	}
	for _, p := range prefixes {
		if stack == p || strings.HasPrefix(stack, p+"/") {
			return true
		}
	}
	return false
}

// checkKey checks key as store.CheckKey does and refuses, with
// STORE_PERMISSION, a stack row-level security keeps from the role: its
// rows would read as an empty scope.
func (s *Store) checkKey(key store.Key) error {
	if err := store.CheckKey(key); err != nil {
		return err
	}
	return s.checkStack(key.Stack)
}

// checkStack is checkKey's grant check.
func (s *Store) checkStack(stack string) error {
	if !s.access.bound || Granted(s.access.prefixes, stack) {
		return nil
	}
	granted := "no stacks"
	if len(s.access.prefixes) > 0 {
		granted = "the stacks under " + strings.Join(s.access.prefixes, ", ")
	}
	return errcode.New(errcode.StorePermission, "the PostgreSQL store %s does not grant role %s the stack %s: row-level security grants it %s",
		s.name, s.access.role, stack, granted).
		WithHint(fmt.Sprintf("Run this stack with the credentials of the repository that owns it, or ask the store's administrator to run, as the schema's owner, "+
			"the SQL of `sponson grants --store postgres://... --for %s --stack-prefix PREFIX` with a PREFIX of this stack (e.g. %s).",
			s.access.role, suggestPrefix(stack))).
		With("store", s.name).With("stack", stack)
}

// suggestPrefix is the repository part of a stack name, what a grant
// usually names: the part before "//", or the whole name.
func suggestPrefix(stack string) string {
	repo, _, _ := strings.Cut(stack, "//")
	return repo
}

// PerStackSQL returns the statements that let role use only the stacks
// prefix grants (Granted) in schema (the store's schema, DefaultSchema
// unless the store was opened WithSchema), as one transaction. role must be a plain
// lower-case SQL name; prefix is a stack name prefix such as
// "github.com/acme/app". Running it for a second role, or again, keeps the
// grants it made before: the policies are the same for every role.
func PerStackSQL(schema, role, prefix string) (string, error) {
	if !schemaName().MatchString(role) || !schemaName().MatchString(schema) {
		return "", fmt.Errorf("role %q and schema %q must be lower-case SQL names (letters, digits, _)", role, schema)
	}
	p, err := GrantPrefix(prefix)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- Stacks %[1]s and %[1]s/... for role %[2]s (sponson grants). Run as the owner of schema %[3]s.\n", p, role, schema)
	b.WriteString("BEGIN;\n")
	fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", schema, role)
	var data []string
	for _, t := range append(append([]string{}, perStackTables...), "owners") {
		data = append(data, schema+"."+t)
	}
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %s;\n", strings.Join(data, ", "), role)
	fmt.Fprintf(&b, "GRANT SELECT ON %[1]s.schema_version, %[1]s.unmigrated, %[1]s.grants TO %[2]s;\n", schema, role)
	// Earlier versions granted every table: the role must not write the
	// schema's version, the list of unmigrated scopes or its own grants.
	fmt.Fprintf(&b, "REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON %[1]s.schema_version, %[1]s.unmigrated, %[1]s.grants FROM %[2]s;\n", schema, role)
	fmt.Fprintf(&b, "GRANT EXECUTE ON FUNCTION %[1]s.fence(text, text, text, text, bigint), %[1]s.stack_granted(text) TO %[2]s;\n", schema, role)
	fmt.Fprintf(&b, "INSERT INTO %s.grants (role, prefix) VALUES ('%s', '%s') ON CONFLICT DO NOTHING;\n", schema, role, p)
	for _, t := range perStackTables {
		fmt.Fprintf(&b, "ALTER TABLE %s.%s ENABLE ROW LEVEL SECURITY;\n", schema, t)
		// The per-role policy of earlier versions matched a bare prefix
		// (github.com/acme/infra reached github.com/acme/infra-secrets):
		// policies are permissive, so it must go for the bound to hold.
		fmt.Fprintf(&b, "DROP POLICY IF EXISTS %s_own ON %s.%s;\n", role, schema, t)
		fmt.Fprintf(&b, "DROP POLICY IF EXISTS stack_granted ON %s.%s;\n", schema, t)
		fmt.Fprintf(&b, "CREATE POLICY stack_granted ON %[1]s.%[2]s USING (%[1]s.stack_granted(stack)) WITH CHECK (%[1]s.stack_granted(stack));\n", schema, t)
	}
	fmt.Fprintf(&b, "ALTER TABLE %s.owners ENABLE ROW LEVEL SECURITY;\n", schema)
	for _, cmd := range []string{"read", "insert", "update", "delete"} {
		fmt.Fprintf(&b, "DROP POLICY IF EXISTS %s_%s ON %s.owners;\n", role, cmd, schema)
		fmt.Fprintf(&b, "DROP POLICY IF EXISTS stack_granted_%s ON %s.owners;\n", cmd, schema)
	}
	own := fmt.Sprintf("(%s.stack_granted(stack))", schema)
	fmt.Fprintf(&b, "CREATE POLICY stack_granted_read ON %s.owners FOR SELECT USING (true);\n", schema)
	fmt.Fprintf(&b, "CREATE POLICY stack_granted_insert ON %s.owners FOR INSERT WITH CHECK %s;\n", schema, own)
	fmt.Fprintf(&b, "CREATE POLICY stack_granted_update ON %s.owners FOR UPDATE USING %s WITH CHECK %s;\n", schema, own, own)
	fmt.Fprintf(&b, "CREATE POLICY stack_granted_delete ON %s.owners FOR DELETE USING %s;\n", schema, own)
	b.WriteString("COMMIT;\n")
	return b.String(), nil
}
