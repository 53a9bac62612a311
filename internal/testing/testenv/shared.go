package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TB is the part of testing.TB the environment uses. Every *testing.T,
// *testing.B and *testing.F is one; so is the runner of a plane whose life
// is not a test's (SharedClusterAPI's, the run-wide plane of hack/test.sh).
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Skip(args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}

// ClusterAPIKubeconfigEnv names the environment variable holding the
// kubeconfig of a Cluster API plane that a whole run shares (hack/test.sh
// starts one with hack/testrun). When it is set, SharedClusterAPI connects to
// that plane instead of starting one per test binary: CAPD's in-memory
// backend listens on fixed ports, so only one CAPD runs on a machine, and
// one plane for every package lets the packages run at the same time.
const ClusterAPIKubeconfigEnv = "MAGNETITE_CLUSTER_API_KUBECONFIG"

// shared is the test binary's Cluster API plane: started by the first
// SharedClusterAPI call, stopped by Main after the last test.
var shared sharedPlane

// mainInstalled is set by Main: the shared plane's processes live in
// process groups of their own and outlive the test binary unless Main
// stops them, so SharedClusterAPI refuses to start one without it.
var mainInstalled atomic.Bool

// afterTests are what AfterTests registered, run by Main last first.
var afterTests struct {
	mu sync.Mutex
	fs []func()
}

// AfterTests registers f to run once the package's last test has ended
// (for what the tests of a binary share: a built program, say) and reports
// true, when the package's TestMain calls Main or RunMain; without one it
// registers nothing and reports false, and the caller keeps its thing to
// the test (t.Cleanup).
func AfterTests(f func()) bool {
	if !mainInstalled.Load() {
		return false
	}
	afterTests.mu.Lock()
	defer afterTests.mu.Unlock()
	afterTests.fs = append(afterTests.fs, f)
	return true
}

// Main runs the package's tests and then stops the shared plane, if a test
// started one, and returns the exit code, for a TestMain with cleanup of
// its own:
//
//	func TestMain(m *testing.M) {
//		code := testenv.Main(m)
//		// the package's own cleanup
//		os.Exit(code)
//	}
//
// A package without cleanup of its own calls RunMain.
func Main(m *testing.M) int {
	mainInstalled.Store(true)
	code := m.Run()
	if shared.run != nil {
		shared.run.Stop(code != 0)
	}
	sharedPlanes.mu.Lock()
	planes := sharedPlanes.byKey
	sharedPlanes.byKey = nil
	sharedPlanes.mu.Unlock()
	for _, p := range planes {
		if p.run != nil {
			p.run.Stop(code != 0)
		}
	}
	afterTests.mu.Lock()
	fs := afterTests.fs
	afterTests.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	return code
}

// RunMain is Main for a TestMain that has nothing else to do:
//
//	func TestMain(m *testing.M) { testenv.RunMain(m) }
func RunMain(m *testing.M) { os.Exit(Main(m)) }

// SharedClusterAPI returns the Cluster API plane that every test of this
// test binary shares: what StartClusterAPI runs (etcd, kube-apiserver,
// Cluster API's CRDs, the core, kubeadm bootstrap and control plane and
// CAPD in-memory managers), started by the first caller and stopped after
// the last test by Main; or, when $MAGNETITE_CLUSTER_API_KUBECONFIG is set
// (hack/test.sh), the plane the whole run shares. The package's TestMain
// must call Main or RunMain. Skipped under -short.
//
// Tests on a shared plane keep apart by namespace: a Magnetite a test
// starts gets its own [management] namespace_prefix (NamespacePrefix), and
// objects a test makes itself go in a namespace of its own
// (ProjectNamespace). Such tests may call t.Parallel. A test that changes
// what every test sees (stops the API server, installs a different release
// of a provider's CRDs) must not share: it starts a plane of its own with
// Start or StartClusterAPI (only one CAPD runs on a machine, so a test of
// its own that needs CAPD cannot run beside a shared plane).
func SharedClusterAPI(t testing.TB) *APIServer {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs the Cluster API plane from hack/build-testbin.sh; runs in the full suite")
	}
	if !mainInstalled.Load() {
		t.Fatal("testenv: SharedClusterAPI needs the package's TestMain to stop the plane: func TestMain(m *testing.M) { testenv.RunMain(m) }")
	}
	shared.once.Do(func() {
		shared.run = NewPlaneRun("shared Cluster API plane")
		if kc := os.Getenv(ClusterAPIKubeconfigEnv); kc != "" {
			shared.plane, shared.err = connect(shared.run, kc)
			return
		}
		sharedRunsCAPD.Store(true)
		shared.plane, shared.err = shared.run.Start(StartClusterAPI)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.plane
}

// sharedPlanes are the planes SharedPlane started, by key.
var sharedPlanes struct {
	mu    sync.Mutex
	byKey map[string]*sharedPlane
}

type sharedPlane struct {
	once  sync.Once
	run   *PlaneRun
	plane *APIServer
	err   error
}

// SharedPlane returns the plane called key that the tests of this binary
// share: started by the first caller with start, stopped after the last
// test by Main. It is for planes SharedClusterAPI's cannot stand for: one
// with a provider release's CRDs and no CAPD (the OpenStack tests, whose
// infrastructure is the CAPO stand-in), or a bare API server for the
// workload clusters of several tests. The tests keep apart as on the
// shared Cluster API plane: each Magnetite with a namespace_prefix of its
// own (NamespacePrefix), each controller a test starts reading only its
// test's namespaces. A failed start fails every test asking for key.
// Skipped under -short; the package's TestMain must call Main or RunMain.
func SharedPlane(t testing.TB, key string, start func(TB) *APIServer) *APIServer {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs etcd and kube-apiserver from hack/build-testbin.sh; runs in the full suite")
	}
	if !mainInstalled.Load() {
		t.Fatal("testenv: SharedPlane needs the package's TestMain to stop the plane: func TestMain(m *testing.M) { testenv.RunMain(m) }")
	}
	sharedPlanes.mu.Lock()
	if sharedPlanes.byKey == nil {
		sharedPlanes.byKey = map[string]*sharedPlane{}
	}
	p, ok := sharedPlanes.byKey[key]
	if !ok {
		p = &sharedPlane{}
		sharedPlanes.byKey[key] = p
	}
	sharedPlanes.mu.Unlock()
	p.once.Do(func() {
		p.run = NewPlaneRun("shared plane " + key)
		p.plane, p.err = p.run.Start(start)
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.plane
}

// SharedProviders is the SharedPlane of this binary with Cluster API's
// CRDs (InstallClusterAPI) and the named providers' (InstallProviders),
// and no manager: the tests on it play the controllers' parts themselves.
// Its key is the providers, so tests asking for the same ones share it;
// two releases of one provider are one group at two sets of versions, so
// each gets a plane of its own.
func SharedProviders(t testing.TB, providers ...string) *APIServer {
	t.Helper()
	return SharedPlane(t, "cluster-api+"+strings.Join(providers, "+"), func(tb TB) *APIServer {
		s := Start(tb)
		s.InstallClusterAPI(tb)
		s.InstallProviders(tb, providers...)
		return s
	})
}

// connect is the run-wide plane a kubeconfig reaches, as a shared plane of
// this binary that starts and stops nothing.
func connect(r *PlaneRun, kubeconfig string) (*APIServer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("testenv: $%s: %w", ClusterAPIKubeconfigEnv, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return &APIServer{Config: cfg, Dir: r.TempDir(), runWide: true}, nil
}

var notNameChar = regexp.MustCompile(`[^a-z0-9]+`)

// NamespacePrefix is a [management] namespace_prefix of the test's own for
// a Magnetite it starts on a shared plane: the test's name, shortened, and
// a random part, at most 30 characters as Magnetite allows, so its project
// namespaces are apart from every other test's even when two tests use the
// same Keystone project.
func NamespacePrefix(t testing.TB) string {
	t.Helper()
	slug := strings.Trim(notNameChar.ReplaceAllString(strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), "-"), "-")
	if len(slug) > 21 {
		slug = strings.TrimRight(slug[:21], "-")
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	if slug == "" {
		return "t-" + hex.EncodeToString(b) + "-"
	}
	return slug + "-" + hex.EncodeToString(b) + "-"
}

// ProjectNamespace creates a namespace of the test's own on the plane, for
// objects the test makes itself, and returns its name. It is left to the
// plane's end: the test API server runs no namespace controller, so a
// deleted namespace would never go.
func (s *APIServer) ProjectNamespace(t testing.TB) string {
	t.Helper()
	name := NamespacePrefix(t) + "objects"
	s.CreateNamespace(t, name)
	return name
}

// PlaneRun runs a plane whose life is not a test's: the shared plane of a
// test binary, or the run-wide one of hack/testrun. It is the TB the
// environment's start-up runs under: a fatal error ends the start and is
// returned by Start, cleanups run at Stop.
type PlaneRun struct {
	name string
	dir  string

	mu          sync.Mutex
	cleanups    []func()
	failure     []string
	testsFailed bool
}

// NewPlaneRun is a runner for the plane called name (in its messages).
func NewPlaneRun(name string) *PlaneRun { return &PlaneRun{name: name} }

// Start runs start (StartClusterAPI, say) under the runner and returns the
// plane, or why it did not start.
func (r *PlaneRun) Start(start func(TB) *APIServer) (*APIServer, error) {
	var s *APIServer
	done := make(chan struct{})
	go func() {
		defer close(done)
		s = start(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failure) > 0 {
		return nil, fmt.Errorf("%s did not start: %s", r.name, strings.Join(r.failure, "; "))
	}
	return s, nil
}

// Stop runs the cleanups, last first (the managers, then kube-apiserver,
// then etcd), and removes the plane's folder. After failed tests, the
// stopping processes' log tails go to standard error.
func (r *PlaneRun) Stop(testsFailed bool) {
	r.mu.Lock()
	r.testsFailed = testsFailed
	cleanups := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// Helper is part of TB; the runner reports no lines.
func (r *PlaneRun) Helper() {}

// Fatal records why the plane failed and ends the start.
func (r *PlaneRun) Fatal(args ...any) {
	r.fail(fmt.Sprint(args...))
	runtime.Goexit()
}

// Fatalf is Fatal with a format.
func (r *PlaneRun) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// Skip cannot happen to a plane: it is a failure.
func (r *PlaneRun) Skip(args ...any) { r.Fatal(append([]any{"skipped: "}, args...)...) }

// Errorf records a failure and carries on.
func (r *PlaneRun) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

func (r *PlaneRun) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failure = append(r.failure, msg)
}

// Logf writes to standard error: a plane's messages belong to no test.
func (r *PlaneRun) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, r.name+": "+format+"\n", args...)
}

// Cleanup runs f at Stop.
func (r *PlaneRun) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// TempDir is a new folder under the plane's own, removed at Stop.
func (r *PlaneRun) TempDir() string {
	r.mu.Lock()
	if r.dir == "" {
		d, err := os.MkdirTemp("", "magnetite-plane-")
		if err != nil {
			r.mu.Unlock()
			r.Fatal(err)
		}
		r.dir = d
	}
	dir := r.dir
	r.mu.Unlock()
	d, err := os.MkdirTemp(dir, "")
	if err != nil {
		r.Fatal(err)
	}
	return d
}

// Failed reports whether the plane failed or the tests on it did, so
// that stopping it shows its processes' last log lines.
func (r *PlaneRun) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failure) > 0 || r.testsFailed
}

// OwnCAPDSkip is the skip message of a test that needs a CAPD of its own
// while a run-wide plane runs one: hack/testrun runs such tests again in a
// network namespace of its own, or once that plane has stopped.
const OwnCAPDSkip = "testenv: needs a CAPD of its own, and the run-wide plane's holds the loopback ports CAPD binds; hack/test.sh runs this test again in a network namespace of its own, or after that plane stops"

// NeedsOwnCAPD skips the test while a run-wide plane runs
// ($MAGNETITE_CLUSTER_API_KUBECONFIG), for tests that start a CAPD
// themselves (StartClusterAPI and StartManagers call it; a test that runs
// one another way, as hack/local-mgmt.sh does, calls it first).
// hack/test.sh runs the skipped tests again in a network namespace of
// their own, or after the run-wide plane stops.
func NeedsOwnCAPD(t TB) {
	t.Helper()
	if os.Getenv(ClusterAPIKubeconfigEnv) != "" {
		t.Skip(OwnCAPDSkip)
	}
	if sharedRunsCAPD.Load() {
		t.Fatal("testenv: this test binary's shared plane runs the machine's one CAPD until the last test ends; a test with a CAPD of its own must not call t.Parallel and must come before the tests that call SharedClusterAPI")
	}
}

// sharedRunsCAPD is set once this binary has started its shared plane
// (and with it a CAPD that runs until Main stops it).
var sharedRunsCAPD atomic.Bool

// errRunWide is why a test may not stop or add to the run-wide plane.
var errRunWide = errors.New("testenv: the run-wide plane ($" + ClusterAPIKubeconfigEnv + ") is shared with every package of the run; a test that stops its API server or starts managers needs a plane of its own (Start, StartClusterAPI)")
