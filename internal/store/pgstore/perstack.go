package pgstore

import (
	"fmt"
	"strings"
)

// A stack name is a namespace, not an access control: every role that can
// use the schema reads and writes every stack. PerStackSQL gives one role
// (a repository's CI credentials) its own stacks only, with PostgreSQL's
// row-level security (docs/design.md §5.4): the rows of the stacks whose
// names start with prefix, and the environment-wide rows every run needs
// (the parent leases, the intent lease and its records, whose stack is
// ""). The ownership index stays readable whole, since the foreign check
// reads every stack of the environment, but the role writes only its own
// stacks' rows of it. The schema's owner (who migrates it) is not bound by
// the policies.
//
// An administrator runs the SQL once per role, as the schema's owner, after
// the schema exists (the owner's first run creates it); the README's
// "Stores" section shows it for one repository.

// perStackTables are the tables keyed by stack whose rows a role may read
// and write only for its own stacks.
var perStackTables = []string{"leases", "receipts", "latest", "states", "records", "quarantine"}

// PerStackSQL returns the statements that let role use only the stacks
// whose names start with prefix in schema (the store's schema, "sponson"
// unless the URL names another). role must be a plain lower-case SQL name;
// prefix is a stack name prefix such as "github.com/acme/app".
func PerStackSQL(schema, role, prefix string) (string, error) {
	if !schemaName().MatchString(role) || !schemaName().MatchString(schema) {
		return "", fmt.Errorf("role %q and schema %q must be lower-case SQL names (letters, digits, _)", role, schema)
	}
	if prefix == "" {
		return "", fmt.Errorf("a role needs a stack prefix: an empty one would reach every stack")
	}
	own := fmt.Sprintf("(stack = '' OR starts_with(stack, '%s'))", strings.ReplaceAll(prefix, "'", "''"))
	var b strings.Builder
	fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", schema, role)
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %s TO %s;\n", schema, role)
	fmt.Fprintf(&b, "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA %s TO %s;\n", schema, role)
	for _, t := range perStackTables {
		fmt.Fprintf(&b, "ALTER TABLE %s.%s ENABLE ROW LEVEL SECURITY;\n", schema, t)
		fmt.Fprintf(&b, "CREATE POLICY %s_own ON %s.%s TO %s USING %s WITH CHECK %s;\n", role, schema, t, role, own, own)
	}
	fmt.Fprintf(&b, "ALTER TABLE %s.owners ENABLE ROW LEVEL SECURITY;\n", schema)
	fmt.Fprintf(&b, "CREATE POLICY %s_read ON %s.owners FOR SELECT TO %s USING (true);\n", role, schema, role)
	for _, cmd := range []string{"INSERT", "UPDATE", "DELETE"} {
		check := " WITH CHECK " + own
		using := " USING " + own
		switch cmd {
		case "INSERT":
			using = ""
		case "DELETE":
			check = ""
		}
		fmt.Fprintf(&b, "CREATE POLICY %s_%s ON %s.owners FOR %s TO %s%s%s;\n", role, strings.ToLower(cmd), schema, cmd, role, using, check)
	}
	return b.String(), nil
}
