package store

import (
	"slices"
	"strings"
	"testing"
)

// TestMigrationsRenderForEveryDialect: each migration file renders for both
// backends with no token left, versions run 1, 2, 3... with none missing,
// and a token a dialect does not define stops the migration instead of
// reaching the database.
func TestMigrationsRenderForEveryDialect(t *testing.T) {
	for _, dialect := range []Dialect{SQLite, MySQL} {
		ms, err := loadMigrations(dialect)
		if err != nil {
			t.Fatalf("%s: %v", dialect, err)
		}
		if len(ms) == 0 {
			t.Fatalf("%s: no migrations", dialect)
		}
		for i, m := range ms {
			if m.version != i+1 {
				t.Errorf("%s: migration %s is version %d, want %d", dialect, m.name, m.version, i+1)
			}
			if strings.Contains(m.body, "{{") || strings.Contains(m.body, "}}") {
				t.Errorf("%s: migration %s keeps a token after rendering:\n%s", dialect, m.name, m.body)
			}
		}
	}
	if LatestVersion(SQLite) != LatestVersion(MySQL) {
		t.Fatal("the dialects' latest schema versions differ")
	}

	body := "CREATE TABLE t (id {{id}}, doc {{json}}) {{table_options}};"
	_, err := renderMigration(MySQL, "0099_t.sql", body)
	if err == nil || !strings.Contains(err.Error(), "0099_t.sql uses {{json}}, which the mysql dialect does not define") {
		t.Fatalf("rendering an unknown token: %v", err)
	}
	got, err := renderMigration(SQLite, "0099_t.sql", "CREATE TABLE t (id {{id}}) {{table_options}};")
	if want := "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT) ;"; err != nil || got != want {
		t.Fatalf("rendered %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"{{convert_table}}", "{{table_options t}}"} {
		if _, err := renderMigration(MySQL, "0099_t.sql", bad+";"); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("rendering %s: %v, want it refused", bad, err)
		}
	}
	convert := "-- c\n{{convert_table t}};\nCREATE TABLE u (id {{id}}) {{table_options}};"
	for dialect, want := range map[Dialect][]string{
		MySQL:  {"-- c\nALTER TABLE t ENGINE=InnoDB, CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "CREATE TABLE u (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY) " + mysqlTableOptions},
		SQLite: {"CREATE TABLE u (id INTEGER PRIMARY KEY AUTOINCREMENT)"},
	} {
		body, err := renderMigration(dialect, "0099_t.sql", convert)
		if got := splitStatements(body); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: statements %q, %v; want %q", dialect, got, err, want)
		}
	}
}
