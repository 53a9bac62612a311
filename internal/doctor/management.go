package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// Kubeconfig checks the management-cluster kubeconfig: configured, present,
// parseable with a server to talk to, and private to its owner (it usually
// holds cluster-admin credentials). inPod reports Magnetite running in a
// pod, where an empty path means the pod's service account.
func Kubeconfig(path string, inPod bool) Result {
	const check = "management kubeconfig"
	if path == "" {
		if inPod {
			return pass(check, "[management] kubeconfig is empty: the pod's service account is used")
		}
		return fail(check, "set [management] kubeconfig to the management cluster's kubeconfig (mode 0600)",
			"no management cluster configured: [management] kubeconfig is empty and Magnetite is not running in a pod")
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(check, "copy the management cluster's kubeconfig there with umask 077, or correct [management] kubeconfig",
				"%s does not exist", path)
		}
		return fail(check, "make the file readable by the user Magnetite runs as", "%v", err)
	}
	f, err := mgmt.CheckKubeconfigPermissions(path)
	if err != nil {
		return fail(check, "make the file readable by the user Magnetite runs as", "%v", err)
	}
	if f != nil {
		return fail(check, fmt.Sprintf("chmod 0600 %s (and chown it to the user Magnetite runs as)", path), "%s", f.Message)
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return fail(check, "copy the kubeconfig again; compare checksums with the source", "%s cannot be parsed: %v", path, err)
	}
	cc, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
	if err != nil {
		return fail(check, "copy the kubeconfig again (an empty or truncated copy looks like this); compare checksums with the source",
			"%s has no usable current context: %v", path, err)
	}
	return pass(check, "%s, mode 0600 or stricter, server %s", path, cc.Host)
}

// ManagementReachable opens a TCP connection to the API server.
func ManagementReachable(ctx context.Context, cfg *rest.Config) Result {
	const check = "management API reachable"
	addr, err := hostPort(cfg.Host)
	if err != nil {
		return fail(check, "correct the server: line of the kubeconfig", "%v", err)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	start := time.Now()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fail(check, fmt.Sprintf("open tcp/%s from this host to %s (security group, firewall), and check the kubeconfig's server: line",
			portOf(addr), hostOf(addr)), "TCP to %s: %v", addr, err)
	}
	conn.Close()
	return pass(check, "TCP to %s connected in %s", addr, time.Since(start).Round(time.Millisecond))
}

// ManagementAuthenticated asks the API server who the kubeconfig's
// credentials belong to (a SelfSubjectReview), so a wrong token, an expired
// certificate or a CA mismatch shows here rather than at the first apply.
func ManagementAuthenticated(ctx context.Context, cfg *rest.Config) Result {
	const check = "management API authenticated"
	user, err := whoAmI(ctx, cfg)
	switch {
	case apierrors.IsUnauthorized(err):
		return fail(check, "the kubeconfig's token or client certificate is wrong or expired; fetch a fresh kubeconfig",
			"%s refused the kubeconfig's credentials: %v", cfg.Host, err)
	case err != nil && isCertificateError(err):
		return fail(check, "the kubeconfig's certificate-authority-data must be the CA that signed the API server's certificate (and the server: name must be in it)",
			"TLS to %s failed: %v", cfg.Host, err)
	case err != nil:
		return fail(check, "see the error; the kubeconfig's user must be able to reach the API", "%s: %v", cfg.Host, err)
	}
	return pass(check, "authenticated as %s", user)
}

// whoAmI names the user (and groups) the API server sees in cfg's
// credentials.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	u := r.Status.UserInfo
	if len(u.Groups) == 0 {
		return u.Username, nil
	}
	return fmt.Sprintf("%s (groups %s)", u.Username, strings.Join(u.Groups, ", ")), nil
}

func isCertificateError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}

func hostPort(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("server %q is not a URL", server)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	if u.Scheme == "http" {
		return net.JoinHostPort(u.Hostname(), "80"), nil
	}
	return net.JoinHostPort(u.Hostname(), "443"), nil
}

func hostOf(addr string) string { h, _, _ := net.SplitHostPort(addr); return h }
func portOf(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

// KindResolver says where the management cluster serves each kind;
// *mgmt.Client is one.
type KindResolver interface {
	Resource(ctx context.Context, kind string) (mgmt.Resource, error)
	Findings() []mgmt.Finding
}

// kindSet is a provider's kinds, checked together.
type kindSet struct {
	name  string
	kinds []kinds.Kind
}

// coreKinds are kinds of Cluster API's own groups, which Magnetite writes
// at v1beta2 only.
func coreKinds(group string, names ...string) []kinds.Kind {
	var out []kinds.Kind
	for _, n := range names {
		out = append(out, kinds.Kind{Kind: n, Group: group, Versions: []string{capi.CoreAPIVersion}, Releases: coreReleases})
	}
	return out
}

// coreReleases are the Cluster API releases serving the v1beta2 contract.
const coreReleases = "Cluster API v1.11 or newer serves v1beta2"

var (
	requiredKindSets = []kindSet{
		{"Cluster API core", coreKinds(kinds.GroupCluster, "Cluster", "ClusterClass", "MachineDeployment", "MachineSet", "Machine", "MachineHealthCheck")},
		{"kubeadm bootstrap", coreKinds(kinds.GroupBootstrap, "KubeadmConfig", "KubeadmConfigTemplate")},
		{"kubeadm control plane", coreKinds(kinds.GroupControlPlane, "KubeadmControlPlane", "KubeadmControlPlaneTemplate")},
	}
	// metal3Versions are the versions of the Metal3 groups Magnetite reads
	// and writes; the Cluster API groups' are declared on their kinds.
	metal3Versions = map[string][]string{
		kinds.GroupMetal3:     {"v1alpha1"},
		kinds.GroupMetal3IPAM: {"v1alpha1"},
	}
)

// servedSet is what discovery found for one kind set.
type servedSet struct {
	versions    []string // "Kind group/version (override)"
	missing     []string
	unsupported []string
	// releases names the releases that serve versions Magnetite writes.
	releases string
}

func resolveSet(ctx context.Context, r KindResolver, set kindSet) (servedSet, error) {
	var s servedSet
	for _, k := range set.kinds {
		if k.Releases != "" && s.releases == "" {
			s.releases = k.Releases
		}
		res, err := r.Resource(ctx, k.Kind)
		if errors.Is(err, mgmt.ErrKindNotServed) {
			s.missing = append(s.missing, k.Kind)
			continue
		}
		if err != nil {
			return s, err
		}
		desc := k.Kind + " " + res.APIVersion()
		if res.Source == "override" {
			desc += " (override)"
		}
		s.versions = append(s.versions, desc)
		if !supported(k, res.GroupVersion.Version) {
			s.unsupported = append(s.unsupported, desc)
		}
	}
	return s, nil
}

// supported reports whether Magnetite writes k at version.
func supported(k kinds.Kind, version string) bool {
	if len(k.Versions) > 0 {
		return slices.Contains(k.Versions, version)
	}
	if vs, ok := metal3Versions[k.Group]; ok {
		return slices.Contains(vs, version)
	}
	return true
}

func (s servedSet) names() []string {
	var out []string
	for _, d := range s.versions {
		out = append(out, strings.Fields(d)[0])
	}
	return out
}

// ServedKinds reports, for Cluster API core, kubeadm bootstrap and control
// plane, and the infrastructure providers, the version at which the
// management cluster serves each kind Magnetite uses (or the configured
// override), which is the version Magnetite writes it at, and the release
// found (providers: the image tags of provider Deployments, or the CRDs'
// contract labels). It refuses kinds that are missing or served only at
// versions Magnetite does not write, naming the releases that serve one,
// and overrides the cluster does not serve.
//
// infrastructures are the drivers' kinds by driver name
// (driver.Registry.KindsByDriver): at least one driver's must be served in
// full, optional kinds aside.
func ServedKinds(ctx context.Context, r KindResolver, infrastructures map[string][]kinds.Kind, providers Providers) []Result {
	var out []Result
	for _, set := range requiredKindSets {
		check := "CRDs " + set.name
		s, err := resolveSet(ctx, r, set)
		switch {
		case err != nil:
			out = append(out, fail(check, "see management API reachable and authenticated", "discovery failed: %v", err))
		case len(s.unsupported) > 0:
			detail := "served only at versions Magnetite does not write: " + strings.Join(s.unsupported, ", ")
			if len(s.missing) > 0 {
				detail += "; not served: " + strings.Join(s.missing, ", ")
			}
			if from := providers.describe(s.names()); from != "" {
				detail += "; found " + from
			}
			out = append(out, fail(check, unsupportedFix(set), "%s", detail))
		case len(s.missing) > 0:
			out = append(out, fail(check, "install the provider's CRDs (clusterctl init), or start the local management plane",
				"not served: %s", strings.Join(s.missing, ", ")))
		default:
			detail := strings.Join(s.versions, ", ") + "; Magnetite writes " + writtenVersions(s.versions) + " (" + s.releases + ")"
			if from := providers.describe(s.names()); from != "" {
				detail += "; found " + from
			}
			out = append(out, pass(check, "%s", detail))
		}
	}
	out = append(out, infrastructureKinds(ctx, r, infrastructures, providers))
	for _, f := range r.Findings() {
		if f.Check == "api-resources" {
			out = append(out, fail("CRDs api_resources override", "correct or remove that entry of [management] api_resources; without it the served version is discovered",
				"%s", f.Message))
		}
	}
	return out
}

func infrastructureKinds(ctx context.Context, r KindResolver, infrastructures map[string][]kinds.Kind, providers Providers) Result {
	const check = "CRDs infrastructure"
	var served, partial, absent, releases []string
	for _, name := range slices.Sorted(maps.Keys(infrastructures)) {
		set := kindSet{name: name}
		for _, k := range infrastructures[name] {
			if !k.Optional {
				set.kinds = append(set.kinds, k)
			}
		}
		s, err := resolveSet(ctx, r, set)
		from := providers.describe(s.names())
		if from != "" {
			from = "; found " + from
		}
		switch {
		case err != nil:
			return fail(check, "see management API reachable and authenticated", "discovery failed: %v", err)
		case len(s.versions) == 0:
			absent = append(absent, set.name)
		case len(s.missing) > 0:
			partial = append(partial, fmt.Sprintf("%s lacks %s", set.name, strings.Join(s.missing, ", ")))
		case len(s.unsupported) > 0:
			partial = append(partial, fmt.Sprintf("%s served only at versions Magnetite does not write: %s%s", set.name, strings.Join(s.unsupported, ", "), from))
			if s.releases != "" {
				releases = append(releases, s.releases)
			}
		default:
			served = append(served, fmt.Sprintf("%s: %s; Magnetite writes %s%s", set.name, strings.Join(s.versions, ", "), writtenVersions(s.versions), from))
		}
	}
	sort.Strings(absent)
	notInstalled := ""
	if len(absent) > 0 {
		notInstalled = "; not installed: " + strings.Join(absent, ", ")
	}
	switch {
	case len(partial) > 0:
		fix := "install the provider's complete CRD set"
		if len(releases) > 0 {
			fix = "install a provider release Magnetite writes for (" + strings.Join(releases, "; ") + ")"
		}
		return fail(check, fix, "%s%s", strings.Join(partial, "; "), notInstalled)
	case len(served) == 0:
		return fail(check, "install an infrastructure provider: CAPO for OpenStack, CAPM3 and BMO for Metal3 bare metal",
			"no infrastructure provider's kinds are served%s", notInstalled)
	}
	return pass(check, "%s%s", strings.Join(served, "; "), notInstalled)
}

func unsupportedFix(set kindSet) string {
	return fmt.Sprintf("upgrade %s to a release serving v1beta2 (Cluster API v1.11 or newer, and its providers' matching releases): Magnetite writes Cluster API's own kinds at v1beta2 only", set.name)
}
