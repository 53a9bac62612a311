package horizon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testbrowser"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// session is a user's browser on the dashboard.
type session struct {
	t         *testing.T
	b         *testbrowser.Browser
	h         *dashboard
	artifacts string
	shots     int
}

// shot saves a screenshot of the current page as the next numbered step.
func (s *session) shot(name string) {
	s.t.Helper()
	s.shots++
	path := filepath.Join(s.artifacts, fmt.Sprintf("%02d-%s.png", s.shots, name))
	s.b.Screenshot(path)
	s.t.Logf("screenshot: %s", path)
}

// fail saves the page (screenshot and HTML) and fails the test.
func (s *session) fail(format string, args ...any) {
	s.t.Helper()
	s.shot("failure")
	var html string
	s.b.Script(&html, "return document.documentElement.outerHTML;")
	path := filepath.Join(s.artifacts, fmt.Sprintf("%02d-failure.html", s.shots))
	os.WriteFile(path, []byte(html), 0o644)
	s.t.Fatalf(format+"\n(page %s saved as %s)", append(args, s.b.URL(), path)...)
}

// wait polls cond until it holds, saving the page when limit passes.
func (s *session) wait(what string, limit time.Duration, cond func() (bool, string)) {
	s.t.Helper()
	if ok, state := testenv.Poll(limit, 250*time.Millisecond, cond); !ok {
		s.fail("waited %s for %s; last state: %s", limit, what, state)
	}
}

// open loads a page of the dashboard.
func (s *session) open(path string) {
	s.t.Helper()
	s.b.Open(s.h.URL + path)
}

// errorMessages returns the error messages the page shows: Horizon's
// toasts and Django messages of the danger and error kinds.
func (s *session) errorMessages() []string {
	s.t.Helper()
	var msgs []string
	s.b.Script(&msgs, `return Array.from(document.querySelectorAll('.alert-danger, .alert-error'))
		.filter(e => e.offsetParent !== null).map(e => e.innerText.trim());`)
	return msgs
}

// noErrors fails the test when the page shows an error message.
func (s *session) noErrors(step string) {
	s.t.Helper()
	if msgs := s.errorMessages(); len(msgs) > 0 {
		s.fail("%s: the page shows errors: %q", step, msgs)
	}
}

// login signs in through the login form.
func (s *session) login() {
	s.t.Helper()
	s.open("/auth/login/")
	s.waitFor("#id_username").Type(userName)
	s.waitFor("#id_password").Type(userPassword)
	s.shot("login")
	s.waitFor("#loginBtn").Click()
	s.wait("the project overview after login", time.Minute, func() (bool, string) {
		u := s.b.URL()
		return !strings.Contains(u, "/auth/login"), u
	})
	s.noErrors("login")
}

// waitFor returns the first displayed element matching css, waiting for it.
func (s *session) waitFor(css string) testbrowser.Element {
	s.t.Helper()
	return s.waitShown("an element "+css, func() []testbrowser.Element { return s.b.Find(css) })
}

// waitText returns the first displayed element of the XPath-selected kind
// (such as "button" or "a") whose text is text, waiting for it.
func (s *session) waitText(kind, text string) testbrowser.Element {
	s.t.Helper()
	return s.waitXPath(fmt.Sprintf("//%s[normalize-space(.)=%q]", kind, text))
}

// waitXPath returns the first displayed element matching expr, waiting
// for it.
func (s *session) waitXPath(expr string) testbrowser.Element {
	s.t.Helper()
	return s.waitShown("an element "+expr, func() []testbrowser.Element { return s.b.XPath(expr) })
}

// waitShown waits until one of the elements find returns is displayed.
func (s *session) waitShown(what string, find func() []testbrowser.Element) testbrowser.Element {
	s.t.Helper()
	var found testbrowser.Element
	s.wait(what, 30*time.Second, func() (bool, string) {
		for _, e := range find() {
			if e.Displayed() {
				found = e
				return true, ""
			}
		}
		return false, "not shown"
	})
	return found
}

// table is what an Angular resource table of the page shows.
type table struct {
	Headers []string
	Rows    [][]string
	// Empty is true when the table shows its "no items" row.
	Empty bool
}

// readTable reads the page's resource table.
func (s *session) readTable() (table, bool) {
	s.t.Helper()
	var tb struct {
		Found bool
		table
	}
	s.b.Script(&tb, `var t = document.querySelector('table.table');
		if (!t) return {Found: false};
		var text = e => e.innerText.trim();
		var headers = Array.from(t.querySelectorAll('thead tr:last-child th')).map(text);
		// Item rows have a cell per column; the detail drawer and the
		// "no items" row have one.
		var rows = Array.from(t.querySelectorAll('tbody > tr'))
			.filter(tr => tr.offsetParent !== null && tr.querySelectorAll(':scope > td').length > 2)
			.map(tr => Array.from(tr.children).map(text));
		var empty = t.querySelector('td.no-rows-help') !== null;
		return {Found: true, Headers: headers, Rows: rows, Empty: empty};`)
	return tb.table, tb.Found
}

// waitTable waits until the page's table shows the columns want and its
// rows satisfy done (rows by column name); it fails when a column of
// filled is empty in a row.
func (s *session) waitTable(what string, want, filled []string, done func(rows []map[string]string) bool) []map[string]string {
	s.t.Helper()
	var rows []map[string]string
	s.wait(what, time.Minute, func() (bool, string) {
		s.noErrors(what)
		tb, ok := s.readTable()
		if !ok {
			return false, "no table"
		}
		for _, col := range want {
			if !slices.Contains(tb.Headers, col) {
				return false, fmt.Sprintf("columns %q lack %q", tb.Headers, col)
			}
		}
		rows = rows[:0]
		for _, r := range tb.Rows {
			m := map[string]string{}
			for i, h := range tb.Headers {
				if i < len(r) && h != "" {
					m[h] = r[i]
				}
			}
			rows = append(rows, m)
		}
		if !done(rows) {
			return false, fmt.Sprintf("rows %q", rows)
		}
		for _, r := range rows {
			for _, col := range filled {
				if r[col] == "" {
					s.fail("%s: column %q is empty in row %q", what, col, r)
				}
			}
		}
		return true, ""
	})
	return rows
}
