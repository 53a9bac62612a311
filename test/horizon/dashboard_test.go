package horizon

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
	"github.com/magnetite-io/magnetite/internal/testing/testmagnetite"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

const (
	// dashboardWSGI is Debian's WSGI entry point of openstack-dashboard.
	dashboardWSGI = "/usr/share/openstack-dashboard/wsgi.py"
	// dashboardStatic holds the static files Debian collected and
	// compressed (offline compression) at install time.
	dashboardStatic = "/var/lib/openstack-dashboard/static"
)

// dashboard is a running Horizon.
type dashboard struct {
	URL string
	log string
}

// localSettings is what an operator writes into Horizon's
// local_settings.py to use a Keystone. Debian's settings import the first
// `local.local_settings` on the Python path, so this file, in the test's
// own `local` package placed first, stands in for
// /etc/openstack-dashboard/local_settings.py without touching it.
const localSettings = `import os
DEBUG = False
ALLOWED_HOSTS = ['127.0.0.1']
SECRET_KEY = %[1]q
OPENSTACK_KEYSTONE_URL = %[2]q
OPENSTACK_KEYSTONE_DEFAULT_ROLE = 'member'
TIME_ZONE = 'UTC'
# Users land on the clusters panel (the stand-ins for Nova and Neutron do
# not serve the usage and quota reads of the project overview).
LOGIN_REDIRECT_URL = '/project/clusters/'
# One uwsgi process: sessions in its memory.
SESSION_ENGINE = 'django.contrib.sessions.backends.cache'
CACHES = {'default': {'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}}
LOGGING = {
    'version': 1,
    'disable_existing_loggers': False,
    'formatters': {'plain': {'format': '%%(asctime)s %%(levelname)s %%(name)s %%(message)s'}},
    'handlers': {'stderr': {'class': 'logging.StreamHandler', 'formatter': 'plain', 'level': 'INFO'}},
    'root': {'handlers': ['stderr'], 'level': 'INFO'},
    'loggers': {
        'django.server': {'level': 'WARNING'},
        'magnum_ui': {'handlers': ['stderr'], 'level': 'DEBUG', 'propagate': False},
    },
}
`

// startDashboard serves Debian's openstack-dashboard (with the Container
// Infra panels of python3-magnum-ui) under uwsgi on loopback, against ks,
// with its static files served by uwsgi, and stops it at cleanup.
func startDashboard(t *testing.T, ks *testkeystone.Keystone) *dashboard {
	t.Helper()
	testproc.Require(t, dashboardWSGI, dashboardStatic, "/usr/lib/python3/dist-packages/magnum_ui")
	uwsgi := testproc.Require(t, "uwsgi")[0]
	dir := t.TempDir()
	local := filepath.Join(dir, "local")
	if err := os.Mkdir(local, 0o700); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 24)
	rand.Read(key)
	files := map[string]string{
		filepath.Join(local, "__init__.py"):       "",
		filepath.Join(local, "local_settings.py"): fmt.Sprintf(localSettings, hex.EncodeToString(key), ks.AuthURL()),
	}
	addr := testmagnetite.FreeAddr(t)
	files[filepath.Join(dir, "uwsgi.ini")] = fmt.Sprintf(`[uwsgi]
plugins = python3
http-socket = %s
pythonpath = %s
wsgi-file = %s
static-map = /static=%s
processes = 1
threads = 4
enable-threads = true
master = true
die-on-term = true
need-app = true
buffer-size = 65535
`, addr, dir, dashboardWSGI, dashboardStatic)
	for path, body := range files {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := &dashboard{URL: "http://" + addr, log: filepath.Join(dir, "horizon.log")}
	proc, err := testproc.Start(exec.Command(uwsgi, "--ini", filepath.Join(dir, "uwsgi.ini")), d.log)
	if err != nil {
		t.Fatalf("start uwsgi: %v", err)
	}
	exited := proc.Exited()
	t.Cleanup(func() {
		proc.Stop(15 * time.Second)
		if t.Failed() {
			t.Logf("Horizon's log ends:\n%s", d.logTail())
		}
	})
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-exited:
			t.Fatalf("uwsgi serving Horizon exited during start:\n%s", d.logTail())
		default:
		}
		if res, err := client.Get(d.URL + "/auth/login/"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Horizon did not serve its login page within 2 minutes:\n%s", d.logTail())
		}
		time.Sleep(200 * time.Millisecond) // polling interval while Django loads
	}
}

// logTail is the end of Horizon's log without the warnings oslo.policy
// prints for every policy of Debian's files.
func (d *dashboard) logTail() string {
	b, _ := os.ReadFile(d.log)
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "Warning: ") || strings.TrimSpace(line) == "warnings.warn(" || strings.TrimSpace(line) == "warnings.warn(msg)" {
			continue
		}
		kept = append(kept, line)
	}
	out := strings.Join(kept, "\n")
	const n = 12000
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// logRecord starts a line of Horizon's log that is not part of a
// traceback: a logging record (it begins with its time) or uwsgi's line of
// a request.
var logRecord = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\[pid: )`)

// errors returns the errors Horizon logged (each ERROR line with the
// traceback that follows it), leaving out those that known(entry) says are
// expected.
func (d *dashboard) errors(known func(entry string) bool) []string {
	b, _ := os.ReadFile(d.log)
	var out []string
	entry := ""
	flush := func() {
		if entry != "" && !known(entry) {
			out = append(out, entry)
		}
		entry = ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, " ERROR "):
			flush()
			entry = line
		case logRecord.MatchString(line):
			flush()
		case entry != "":
			entry += "\n" + line // its traceback, chained ones included
		}
	}
	flush()
	return out
}
