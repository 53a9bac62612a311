package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/kinds"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// providerLabel is the label clusterctl puts on every provider component.
const providerLabel = "cluster.x-k8s.io/provider"

// controllerGroups are the API groups whose controllers must run for a
// cluster to be built.
var controllerGroups = []string{kinds.GroupCluster, kinds.GroupBootstrap, kinds.GroupControlPlane, kinds.GroupInfrastructure}

// webhookEndpoint is one admission webhook server, shared by the
// configurations and webhooks that name it.
type webhookEndpoint struct {
	url      string // for webhooks reached by URL (managers run as processes)
	service  *admissionv1.ServiceReference
	caBundle []byte
	groups   map[string]bool
	configs  map[string]bool
}

func (e *webhookEndpoint) key() string {
	if e.url != "" {
		if u, err := url.Parse(e.url); err == nil {
			return u.Host
		}
		return e.url
	}
	port := int32(443)
	if e.service.Port != nil {
		port = *e.service.Port
	}
	return fmt.Sprintf("service %s/%s:%d", e.service.Namespace, e.service.Name, port)
}

// ProviderControllers reports whether the Cluster API controllers are
// running. Providers installed in the management cluster (clusterctl) are
// Deployments labelled cluster.x-k8s.io/provider, judged by their available
// replicas. Every provider also registers admission webhooks for its kinds,
// and the API server calls them on every apply Magnetite makes: webhooks
// behind a Service are judged by the Service's ready endpoints, webhooks
// reached by URL — managers run as processes, as on the local management
// plane — by a TLS handshake verified with the registered CA bundle.
func ProviderControllers(ctx context.Context, cs kubernetes.Interface) []Result {
	var out []Result
	covered := map[string]bool{}

	deps, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: providerLabel})
	if err != nil {
		out = append(out, warn("controllers deployments", "grant the kubeconfig's user list on deployments, or run doctor with an admin kubeconfig",
			"cannot list Deployments: %v", err))
	} else {
		for _, d := range deps.Items {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			check := "controller " + d.Labels[providerLabel]
			if d.Status.AvailableReplicas >= want && want > 0 {
				out = append(out, pass(check, "deployment %s/%s: %d/%d available", d.Namespace, d.Name, d.Status.AvailableReplicas, want))
				for _, g := range groupsOfProvider(d.Labels[providerLabel]) {
					covered[g] = true
				}
				continue
			}
			out = append(out, fail(check, fmt.Sprintf("kubectl -n %s describe deployment %s; kubectl -n %s logs deployment/%s", d.Namespace, d.Name, d.Namespace, d.Name),
				"deployment %s/%s: %d/%d available", d.Namespace, d.Name, d.Status.AvailableReplicas, want))
		}
	}

	endpoints, err := webhookEndpoints(ctx, cs)
	if err != nil {
		out = append(out, warn("controllers webhooks", "grant the kubeconfig's user list on validating and mutating webhook configurations, or run doctor with an admin kubeconfig",
			"cannot list webhook configurations: %v", err))
	}
	for _, e := range endpoints {
		groups := sortedKeys(e.groups)
		check := "controller webhook " + e.key()
		where := fmt.Sprintf("serving %s (%s)", strings.Join(groups, ", "), strings.Join(sortedKeys(e.configs), ", "))
		var r Result
		if e.url != "" {
			r = probeWebhookURL(ctx, check, e, where)
		} else {
			r = probeWebhookService(ctx, cs, check, e, where)
		}
		if r.Status == Pass {
			for _, g := range groups {
				covered[g] = true
			}
		}
		out = append(out, r)
	}

	if len(out) == 0 {
		return []Result{fail("controllers", "install the providers (clusterctl init) or start the local management plane",
			"no Cluster API controller found: no Deployment labelled %s and no webhook for Cluster API kinds", providerLabel)}
	}
	for _, g := range controllerGroups {
		if !covered[g] {
			out = append(out, warn("controllers "+g, "install the provider of these kinds (clusterctl init), or start its manager",
				"no running controller found for %s kinds (no available provider Deployment, no answering webhook)", g))
		}
	}
	return out
}

// groupsOfProvider maps clusterctl's provider label to the API group its
// kinds live in.
func groupsOfProvider(p string) []string {
	switch {
	case p == "cluster-api":
		return []string{kinds.GroupCluster}
	case strings.HasPrefix(p, "bootstrap-"):
		return []string{kinds.GroupBootstrap}
	case strings.HasPrefix(p, "control-plane-"):
		return []string{kinds.GroupControlPlane}
	case strings.HasPrefix(p, "infrastructure-"):
		return []string{kinds.GroupInfrastructure}
	}
	return nil
}

// webhookEndpoints collects the webhook servers of every validating and
// mutating webhook whose rules cover a Cluster API or Metal3 group.
func webhookEndpoints(ctx context.Context, cs kubernetes.Interface) ([]*webhookEndpoint, error) {
	byKey := map[string]*webhookEndpoint{}
	add := func(config string, cc admissionv1.WebhookClientConfig, rules []admissionv1.RuleWithOperations) {
		var groups []string
		for _, r := range rules {
			for _, g := range r.APIGroups {
				if strings.HasSuffix(g, "cluster.x-k8s.io") || strings.HasSuffix(g, "metal3.io") {
					groups = append(groups, g)
				}
			}
		}
		if len(groups) == 0 {
			return
		}
		e := &webhookEndpoint{service: cc.Service, caBundle: cc.CABundle, groups: map[string]bool{}, configs: map[string]bool{}}
		if cc.URL != nil {
			e.url = *cc.URL
		}
		if e.url == "" && e.service == nil {
			return
		}
		if have, ok := byKey[e.key()]; ok {
			e = have
		} else {
			byKey[e.key()] = e
		}
		for _, g := range groups {
			e.groups[g] = true
		}
		e.configs[config] = true
	}
	vs, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range vs.Items {
		for _, w := range c.Webhooks {
			add(c.Name, w.ClientConfig, w.Rules)
		}
	}
	ms, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range ms.Items {
		for _, w := range c.Webhooks {
			add(c.Name, w.ClientConfig, w.Rules)
		}
	}
	out := make([]*webhookEndpoint, 0, len(byKey))
	for _, e := range byKey {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// probeWebhookURL completes a TLS handshake with a webhook reached by URL,
// verifying its certificate as the API server does.
func probeWebhookURL(ctx context.Context, check string, e *webhookEndpoint, where string) Result {
	u, err := url.Parse(e.url)
	if err != nil {
		return fail(check, "correct the url of the webhook configuration", "%s: %v", e.url, err)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	cfg := &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	if len(e.caBundle) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(e.caBundle)
		cfg.RootCAs = pool
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fail(check, "start the manager that serves these webhooks (its --webhook-port), or correct the webhook configuration's url and caBundle",
			"%s %s: %v", e.url, where, err)
	}
	conn.Close()
	return pass(check, "%s answers TLS, %s", e.url, where)
}

// probeWebhookService counts the ready endpoints behind a webhook's Service.
func probeWebhookService(ctx context.Context, cs kubernetes.Interface, check string, e *webhookEndpoint, where string) Result {
	ns, name := e.service.Namespace, e.service.Name
	slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return warn(check, "grant the kubeconfig's user list on endpointslices, or run doctor with an admin kubeconfig",
			"cannot read the endpoints of service %s/%s: %v", ns, name, err)
	}
	ready := 0
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready++
			}
		}
	}
	if ready == 0 {
		return fail(check, fmt.Sprintf("kubectl -n %s get pods; the provider's controller pods are not ready", ns),
			"service %s/%s has no ready endpoints, %s", ns, name, where)
	}
	return pass(check, "service %s/%s has %d ready endpoint(s), %s", ns, name, ready, where)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
