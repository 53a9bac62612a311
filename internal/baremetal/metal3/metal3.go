package metal3

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
	"github.com/magnetite-io/magnetite/internal/fault"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// Annotations and labels on BareMetalHosts. The metal3.io ones are
// baremetal-operator's API; the magnetite.io ones are Magnetite's own.
const (
	annReboot   = "reboot.metal3.io"
	annInspect  = "inspect.metal3.io"
	annDetached = "baremetalhost.metal3.io/detached"
	annPaused   = "baremetalhost.metal3.io/paused"

	annDetachReason = "magnetite.io/detached-reason"
	// annBMCUsername repeats the (not secret) BMC user so a host list does
	// not read every credentials Secret.
	annBMCUsername = "magnetite.io/bmc-username"
	// LabelResourceClass carries a host's resource class in placement form
	// (CUSTOM_BAREMETAL_GOLD), so flavors' classes count Metal3 hosts too.
	LabelResourceClass = "magnetite.io/resource-class"
	// labelHost names, on a credentials Secret, the host it belongs to.
	labelHost = "magnetite.io/host"
	// labelProjectHost marks a host placed in a project's namespace (its
	// value is the namespace); annProject carries the project id verbatim.
	labelProjectHost = "magnetite.io/project-host"
	annProject       = "magnetite.io/project-id"
)

// BareMetalHost provisioning states, as baremetal-operator writes them.
const (
	bmhNone                  = ""
	bmhUnmanaged             = "unmanaged"
	bmhRegistering           = "registering"
	bmhMatchProfile          = "match profile"
	bmhInspecting            = "inspecting"
	bmhPreparing             = "preparing"
	bmhReady                 = "ready"
	bmhAvailable             = "available"
	bmhProvisioning          = "provisioning"
	bmhProvisioned           = "provisioned"
	bmhExternallyProvisioned = "externally provisioned"
	bmhDeprovisioning        = "deprovisioning"
	bmhPoweringOffForDelete  = "powering off before delete"
	bmhDeleting              = "deleting"
)

const kindBMH = "BareMetalHost"

// removedFromMetal3 are address schemes Ironic still ships but current
// baremetal-operator no longer accepts.
var removedFromMetal3 = map[string]string{
	"ilo4":              "use redfish:// if the iLO 4 firmware speaks Redfish",
	"ilo4-virtualmedia": "use redfish-virtualmedia:// if the iLO 4 firmware speaks Redfish",
	"ilo5":              "use ilo5-redfish:// or ilo5-virtualmedia://",
	"irmc":              "use redfish:// or redfish-virtualmedia://",
}

// Config configures the Metal3 backend.
type Config struct {
	Client *mgmt.Client
	// Namespace holds the BareMetalHosts and their credentials Secrets;
	// baremetal-operator must watch it.
	Namespace            string
	DefaultResourceClass string
	Log                  *slog.Logger
}

// Backend is the baremetal.Backend over Metal3: every host is a BareMetalHost and a
// BMC credentials Secret in the management cluster. baremetal-operator
// registers, inspects, cleans and powers the hosts; Magnetite writes the
// spec, fields and annotations of its API and reads back its status.
type Backend struct {
	cfg Config
	mc  *mgmt.Client
	dyn dynamic.Interface
	log *slog.Logger
}

// NewMetal3 builds the Metal3 backend; it does not contact the cluster.
func New(cfg Config) (*Backend, error) {
	if cfg.Client == nil {
		return nil, errors.New("baremetal: the metal3 backend needs the management cluster ([management] kubeconfig)")
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("baremetal: [baremetal] metal3_namespace %q is not a namespace name: %s", cfg.Namespace, strings.Join(errs, "; "))
	}
	if cfg.DefaultResourceClass == "" {
		cfg.DefaultResourceClass = "baremetal"
	}
	dyn, err := dynamic.NewForConfig(cfg.Client.RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("baremetal: management cluster client: %w", err)
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Backend{cfg: cfg, mc: cfg.Client, dyn: dyn, log: log.With("backend", "metal3", "namespace", cfg.Namespace)}, nil
}

// Name implements Backend.
func (m *Backend) Name() string { return "metal3" }

var _ baremetal.SelectorCapacity = (*Backend)(nil)

func credentialsSecretName(host string) string { return host + "-bmc-secret" }

// checkMetal3Spec adds what BareMetalHost needs on top of ValidateSpec.
func checkMetal3Spec(spec baremetal.HostSpec, addr *bmc.Address) error {
	invalid := func(format string, args ...any) error {
		return fault.New(baremetal.ErrInvalidHost, format, args...)
	}
	if errs := validation.IsDNS1123Subdomain(spec.Name); len(errs) > 0 || len(spec.Name) > 63-len("-bmc-secret") {
		return invalid("name %q must be a lowercase DNS name of at most %d letters, digits, '-' and '.' for a BareMetalHost",
			spec.Name, 63-len("-bmc-secret"))
	}
	if hint, gone := removedFromMetal3[addr.Scheme]; gone {
		return invalid("baremetal-operator no longer supports %s:// BMC addresses; %s", addr.Scheme, hint)
	}
	if spec.TargetState == baremetal.TargetManageable {
		return invalid("target_state manageable does not exist in Metal3: baremetal-operator takes every host on to available; detach a host to keep it out of use")
	}
	for k := range spec.Labels {
		if strings.HasPrefix(k, "magnetite.io/") || k == mgmt.LabelManagedBy {
			return invalid("label %s is reserved for Magnetite", k)
		}
	}
	return nil
}

// Enroll implements Backend: the credentials Secret first (so
// baremetal-operator never sees a host without credentials), then the
// BareMetalHost, then the Secret is made the host's dependent.
func (m *Backend) Enroll(ctx context.Context, spec baremetal.HostSpec) (*baremetal.Host, error) {
	addr, err := baremetal.ValidateSpec(&spec, m.cfg.DefaultResourceClass)
	if err != nil {
		return nil, err
	}
	if err := checkMetal3Spec(spec, addr); err != nil {
		return nil, err
	}
	pw := spec.Credentials.Password
	hosts, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		if h.Name == spec.Name {
			return nil, fault.New(baremetal.ErrConflict, "a BareMetalHost named %s already exists (in namespace %s)", spec.Name, h.Namespace)
		}
		if spec.BootMACAddress != "" && strings.EqualFold(h.BootMACAddress, spec.BootMACAddress) {
			return nil, fault.New(baremetal.ErrConflict, "boot MAC address %s is already host %s's", spec.BootMACAddress, h.Name)
		}
	}
	ns, err := m.hostNamespace(ctx, spec.ProjectID)
	if err != nil {
		return nil, m.kubeError(err, "prepare the namespace of project "+spec.ProjectID)
	}
	secret := credentialsSecret(ns, spec)
	if _, err := m.mc.Apply(ctx, mgmt.Owner{}, secret); err != nil {
		return nil, m.kubeError(err, "store the BMC credentials of host "+spec.Name, pw)
	}
	created, err := m.mc.Apply(ctx, mgmt.Owner{}, bareMetalHost(ns, spec, addr))
	if err != nil {
		if _, derr := m.mc.Delete(ctx, "Secret", ns, secret.GetName()); derr != nil {
			m.log.WarnContext(ctx, "could not remove the credentials of a failed enrollment", "host", spec.Name, "error", derr)
		}
		return nil, m.kubeError(err, "enroll host "+spec.Name, pw)
	}
	secret.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: created.GetAPIVersion(), Kind: kindBMH, Name: created.GetName(), UID: created.GetUID(),
	}})
	if _, err := m.mc.Apply(ctx, mgmt.Owner{}, secret); err != nil {
		// Reconcile removes Secrets whose host is gone, so this only
		// delays the clean-up.
		m.log.WarnContext(ctx, "could not make the credentials Secret depend on its host", "host", spec.Name, "error", scrub(err.Error(), pw))
	}
	m.log.InfoContext(ctx, "host enrolled", "host", spec.Name, "uid", created.GetUID(), "bmc", addr.String())
	return hostFromBMH(created), nil
}

func credentialsSecret(ns string, spec baremetal.HostSpec) *unstructured.Unstructured {
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": credentialsSecretName(spec.Name), "namespace": ns,
			"labels": map[string]any{labelHost: spec.Name, mgmt.LabelInventory: "host"}},
		"data": map[string]any{"username": enc(spec.Credentials.Username), "password": enc(spec.Credentials.Password)},
	}}
	return s
}

func bareMetalHost(ns string, spec baremetal.HostSpec, addr *bmc.Address) *unstructured.Unstructured {
	bmc := map[string]any{"address": addr.String(), "credentialsName": credentialsSecretName(spec.Name)}
	if spec.Credentials.DisableCertificateVerification {
		bmc["disableCertificateVerification"] = true
	}
	s := map[string]any{
		"online": true, "bmc": bmc, "bootMode": spec.BootMode, "automatedCleaningMode": spec.CleaningMode,
	}
	if spec.BootMACAddress != "" {
		s["bootMACAddress"] = spec.BootMACAddress
	}
	if hints := rootDeviceHintsSpec(spec.RootDeviceHints); len(hints) > 0 {
		s["rootDeviceHints"] = hints
	}
	labels := map[string]any{LabelResourceClass: baremetal.NormalizeResourceClass(spec.ResourceClass), mgmt.LabelInventory: "host"}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	ann := map[string]any{}
	if spec.ProjectID != "" {
		labels[labelProjectHost] = ns
		ann[annProject] = spec.ProjectID
	}
	if spec.Credentials.Username != "" {
		ann[annBMCUsername] = spec.Credentials.Username
	}
	meta := map[string]any{"name": spec.Name, "namespace": ns, "labels": labels}
	if len(ann) > 0 {
		meta["annotations"] = ann
	}
	return &unstructured.Unstructured{Object: map[string]any{"kind": kindBMH, "metadata": meta, "spec": s}}
}

func rootDeviceHintsSpec(h *baremetal.RootDeviceHints) map[string]any {
	if h == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range map[string]string{"deviceName": h.DeviceName, "hctl": h.HCTL, "model": h.Model, "vendor": h.Vendor,
		"serialNumber": h.SerialNumber, "wwn": h.WWN, "wwnWithExtension": h.WWNWithExtension, "wwnVendorExtension": h.WWNVendorExtension} {
		if v != "" {
			out[k] = v
		}
	}
	if h.MinSizeGigabytes > 0 {
		out["minSizeGigabytes"] = int64(h.MinSizeGigabytes)
	}
	if h.Rotational != nil {
		out["rotational"] = *h.Rotational
	}
	return out
}

// hostNamespace is where a host of a project lives: the project's cluster
// namespace, the only one from which Cluster API Provider Metal3 claims
// hosts for the project's clusters. A host of no project stays in the
// shared metal3_namespace.
func (m *Backend) hostNamespace(ctx context.Context, projectID string) (string, error) {
	if projectID == "" {
		return m.cfg.Namespace, nil
	}
	return m.mc.EnsureNamespace(ctx, projectID)
}

// bmhs lists the inventory's BareMetalHosts matching selector: every one of
// metal3_namespace (those Magnetite did not enroll included) and those
// Magnetite placed in projects' namespaces.
func (m *Backend) bmhs(ctx context.Context, selector string) ([]unstructured.Unstructured, error) {
	items, err := m.mc.List(ctx, kindBMH, m.cfg.Namespace, selector)
	if err != nil {
		return nil, err
	}
	projects := labelProjectHost
	if selector != "" {
		projects += "," + selector
	}
	placed, err := m.mc.List(ctx, kindBMH, "", projects)
	if err != nil {
		return nil, err
	}
	for _, u := range placed {
		if u.GetNamespace() != m.cfg.Namespace {
			items = append(items, u)
		}
	}
	return items, nil
}

// List implements Backend: the hosts of metal3_namespace (the ones Magnetite
// did not enroll included) and those assigned to projects.
func (m *Backend) List(ctx context.Context) ([]*baremetal.Host, error) {
	items, err := m.bmhs(ctx, "")
	if err != nil {
		return nil, m.kubeError(err, "list hosts")
	}
	out := make([]*baremetal.Host, 0, len(items))
	for i := range items {
		out = append(out, hostFromBMH(&items[i]))
	}
	return out, nil
}

// bmh finds a BareMetalHost by name or UID.
func (m *Backend) bmh(ctx context.Context, ident string) (*unstructured.Unstructured, error) {
	if ident == "" {
		return nil, fault.New(baremetal.ErrHostNotFound, "%q", ident)
	}
	items, err := m.bmhs(ctx, "")
	if err != nil {
		return nil, m.kubeError(err, "find host "+ident)
	}
	for i := range items {
		if items[i].GetName() == ident || string(items[i].GetUID()) == ident {
			return &items[i], nil
		}
	}
	return nil, fault.New(baremetal.ErrHostNotFound, "no BareMetalHost %s in namespace %s or assigned to a project", ident, m.cfg.Namespace)
}

// Get implements Backend.
func (m *Backend) Get(ctx context.Context, ident string) (*baremetal.Host, error) {
	u, err := m.bmh(ctx, ident)
	if err != nil {
		return nil, err
	}
	return hostFromBMH(u), nil
}

// patch merge-patches a BareMetalHost (null removes an annotation) as
// Magnetite and returns the result.
func (m *Backend) patch(ctx context.Context, h *baremetal.Host, p map[string]any, doing string) (*baremetal.Host, error) {
	r, err := m.mc.Resource(ctx, kindBMH)
	if err != nil {
		return nil, m.kubeError(err, doing)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	out, err := m.dyn.Resource(r.GVR()).Namespace(h.Namespace).
		Patch(ctx, h.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: mgmt.FieldManager})
	if err != nil {
		return nil, m.kubeError(err, doing)
	}
	return hostFromBMH(out), nil
}

func annotations(kv ...any) map[string]any {
	a := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return map[string]any{"metadata": map[string]any{"annotations": a}}
}

// actionable finds a host that baremetal-operator currently manages.
func (m *Backend) actionable(ctx context.Context, ident, action string) (*baremetal.Host, error) {
	u, err := m.bmh(ctx, ident)
	if err != nil {
		return nil, err
	}
	h := hostFromBMH(u)
	switch {
	case h.DeleteRequested:
		return nil, fault.New(baremetal.ErrConflict, "host %s is being deleted", h.Name)
	case h.Detached:
		return nil, fault.New(baremetal.ErrConflict, "host %s is detached, so baremetal-operator does not act on it; attach it before asking to %s it", h.Name, action)
	}
	return h, nil
}

// Power implements Backend. Power follows spec.online (baremetal-operator
// powers off softly and falls back to a hard power-off); reboots are the
// reboot.metal3.io annotation, which baremetal-operator honours on
// provisioned hosts and removes once the host is back on.
func (m *Backend) Power(ctx context.Context, ident string, action baremetal.PowerAction) (*baremetal.Host, error) {
	h, err := m.actionable(ctx, ident, "power")
	if err != nil {
		return nil, err
	}
	var p map[string]any
	switch action {
	case baremetal.PowerOn:
		p = map[string]any{"spec": map[string]any{"online": true}}
	case baremetal.PowerOff, baremetal.PowerSoftOff:
		p = map[string]any{"spec": map[string]any{"online": false}}
	case baremetal.RebootHard, baremetal.RebootSoft:
		if h.BackendState != bmhProvisioned && h.BackendState != bmhExternallyProvisioned {
			return nil, fault.New(baremetal.ErrConflict, "host %s is %s; Metal3 reboots provisioned hosts only: power it off and on instead", h.Name, h.State)
		}
		mode := "hard"
		if action == baremetal.RebootSoft {
			mode = "soft"
		}
		p = annotations(annReboot, `{"mode":"`+mode+`"}`)
	default:
		return nil, fault.New(baremetal.ErrInvalidHost, "power action %q must be on, off, soft-off, reboot-hard or reboot-soft", action)
	}
	out, err := m.patch(ctx, h, p, fmt.Sprintf("power %s host %s", action, h.Name))
	if err == nil {
		m.log.InfoContext(ctx, "host power change requested", "host", h.Name, "action", string(action))
	}
	return out, err
}

// Inspect implements Backend with the inspect.metal3.io annotation, which
// baremetal-operator ignores unless the host is available: asking in
// another state is refused here rather than silently dropped.
func (m *Backend) Inspect(ctx context.Context, ident string) (*baremetal.Host, error) {
	h, err := m.actionable(ctx, ident, "inspect")
	if err != nil {
		return nil, err
	}
	if h.BackendState != bmhAvailable {
		return nil, fault.New(baremetal.ErrConflict, "host %s is %s; Metal3 re-inspects available hosts only", h.Name, h.State)
	}
	return m.patch(ctx, h, annotations(annInspect, ""), "inspect host "+h.Name)
}

// Provide implements Backend. baremetal-operator takes every host on to
// available by itself and retries failed steps with backoff, so there is
// nothing to ask for.
func (m *Backend) Provide(ctx context.Context, ident string) (*baremetal.Host, error) {
	h, err := m.Get(ctx, ident)
	if err != nil {
		return nil, err
	}
	return nil, fault.New(baremetal.ErrConflict, "host %s is %s; Metal3 moves hosts to available on its own and retries failed steps with backoff (error count %d), so there is nothing to provide", h.Name, h.State, h.ErrorCount)
}

// detachable are the states in which baremetal-operator honours the
// detached annotation.
var detachable = map[string]bool{bmhAvailable: true, bmhProvisioned: true, bmhExternallyProvisioned: true}

// Detach implements Backend with the detached annotation: the host leaves
// Ironic without being deprovisioned.
func (m *Backend) Detach(ctx context.Context, ident, reason string) (*baremetal.Host, error) {
	u, err := m.bmh(ctx, ident)
	if err != nil {
		return nil, err
	}
	h := hostFromBMH(u)
	if !detachable[h.BackendState] {
		return nil, fault.New(baremetal.ErrConflict, "host %s is %s; Metal3 detaches available or provisioned hosts only", h.Name, h.State)
	}
	if reason == "" {
		reason = "no reason given"
	}
	out, err := m.patch(ctx, h, annotations(annDetached, "", annDetachReason, reason), "detach host "+h.Name)
	if err == nil {
		m.log.InfoContext(ctx, "host detached", "host", h.Name, "reason", reason)
	}
	return out, err
}

// Attach implements Backend.
func (m *Backend) Attach(ctx context.Context, ident string) (*baremetal.Host, error) {
	u, err := m.bmh(ctx, ident)
	if err != nil {
		return nil, err
	}
	out, err := m.patch(ctx, hostFromBMH(u), annotations(annDetached, nil, annDetachReason, nil), "attach host "+u.GetName())
	if err == nil {
		m.log.InfoContext(ctx, "host attached", "host", u.GetName())
	}
	return out, err
}

// SetCleaningMode implements Backend through spec.automatedCleaningMode.
func (m *Backend) SetCleaningMode(ctx context.Context, ident, mode string) (*baremetal.Host, error) {
	if err := baremetal.ValidateCleaningMode(mode); err != nil {
		return nil, err
	}
	u, err := m.bmh(ctx, ident)
	if err != nil {
		return nil, err
	}
	return m.patch(ctx, hostFromBMH(u), map[string]any{"spec": map[string]any{"automatedCleaningMode": mode}},
		"set the cleaning mode of host "+u.GetName())
}

// Delete implements Backend. baremetal-operator's finalizer keeps the
// object while it deprovisions and cleans the host (as its cleaning mode
// says); force detaches the host first, so it leaves Ironic without either.
// The credentials Secret goes with the host (owner reference, and
// Reconcile for clusters without a garbage collector).
func (m *Backend) Delete(ctx context.Context, ident string, force bool) (baremetal.DeleteOutcome, *baremetal.Host, error) {
	u, err := m.bmh(ctx, ident)
	if err != nil {
		return baremetal.Deleted, nil, err
	}
	name, ns := u.GetName(), u.GetNamespace()
	if force {
		if _, err := m.patch(ctx, hostFromBMH(u), annotations(annDetached, `{"deleteAction":"delete"}`), "delete host "+name); err != nil {
			return baremetal.Deleted, nil, err
		}
	}
	if _, err := m.mc.Delete(ctx, kindBMH, ns, name); err != nil {
		return baremetal.Deleted, nil, m.kubeError(err, "delete host "+name)
	}
	after, err := m.bmh(ctx, name)
	if errors.Is(err, baremetal.ErrHostNotFound) {
		m.log.InfoContext(ctx, "host deleted", "host", name, "force", force)
		return baremetal.Deleted, nil, m.releaseCredentials(ctx, ns, name)
	}
	if err != nil {
		return baremetal.Deleted, nil, err
	}
	m.log.InfoContext(ctx, "host deletion started; baremetal-operator deprovisions it first", "host", name, "force", force)
	return baremetal.DeleteStarted, hostFromBMH(after), nil
}

func (m *Backend) releaseCredentials(ctx context.Context, namespace, host string) error {
	if _, err := m.mc.Delete(ctx, "Secret", namespace, credentialsSecretName(host)); err != nil {
		return m.kubeError(err, "remove the BMC credentials of host "+host)
	}
	return nil
}

// Capacity implements Backend: the hosts labelled with the resource class.
func (m *Backend) Capacity(ctx context.Context, resourceClass string) (baremetal.Capacity, error) {
	c, err := m.CapacityMatching(ctx, "", map[string]string{LabelResourceClass: baremetal.NormalizeResourceClass(resourceClass)})
	c.ResourceClass = resourceClass
	return c, err
}

// CapacityMatching counts the hosts a cluster of the project could claim:
// those in the project's namespace (and in metal3_namespace when that is
// the project's) carrying every selector label, as a
// Metal3MachineTemplate's hostSelector picks them; with no project, those
// of metal3_namespace. A host is free when Cluster API Provider Metal3
// could claim it now: available, no consumer, not detached, paused,
// failing or being deleted.
func (m *Backend) CapacityMatching(ctx context.Context, projectID string, selector map[string]string) (baremetal.Capacity, error) {
	items, err := m.mc.List(ctx, kindBMH, m.NamespaceOf(projectID), k8slabels.SelectorFromSet(selector).String())
	if err != nil {
		return baremetal.Capacity{}, m.kubeError(err, "count hosts")
	}
	hosts := make([]*baremetal.Host, 0, len(items))
	for i := range items {
		hosts = append(hosts, hostFromBMH(&items[i]))
	}
	return baremetal.Count(hosts, func(*baremetal.Host) bool { return true }), nil
}

// NamespaceOf is where the hosts a project's clusters may claim live: the
// project's namespace, or metal3_namespace without a project.
func (m *Backend) NamespaceOf(projectID string) string {
	if projectID != "" {
		return m.mc.NamespaceName(projectID)
	}
	return m.cfg.Namespace
}

// Matching is CapacityMatching's choice among hosts already read (the
// store's mirror): those in the project's namespace carrying every
// selector label.
func (m *Backend) Matching(projectID string, selector map[string]string) func(*baremetal.Host) bool {
	ns := m.NamespaceOf(projectID)
	return func(h *baremetal.Host) bool {
		if h.Namespace != ns {
			return false
		}
		for k, v := range selector {
			switch {
			case k == LabelResourceClass:
				if h.ResourceClass != v {
					return false
				}
			case h.Labels[k] != v:
				return false
			}
		}
		return true
	}
}

// Reconcile implements Backend. baremetal-operator drives the hosts; what
// is left to Magnetite is removing credentials Secrets whose host is gone
// (the owner reference does it where a garbage collector runs).
func (m *Backend) Reconcile(ctx context.Context) error {
	secrets, err := m.mc.List(ctx, "Secret", "", mgmt.ManagedSelector+","+labelHost)
	if err != nil {
		return m.kubeError(err, "list host credentials")
	}
	var errs []error
	for _, s := range secrets {
		host := s.GetLabels()[labelHost]
		if _, err := m.mc.Get(ctx, kindBMH, s.GetNamespace(), host); !apierrors.IsNotFound(err) {
			if err != nil {
				errs = append(errs, m.kubeError(err, "look up host "+host))
			}
			continue
		}
		if _, err := m.mc.Delete(ctx, "Secret", s.GetNamespace(), s.GetName()); err != nil {
			errs = append(errs, m.kubeError(err, "remove the BMC credentials of deleted host "+host))
			continue
		}
		m.log.InfoContext(ctx, "credentials of a deleted host removed", "host", host)
	}
	return errors.Join(errs...)
}

// kubeError maps a management-cluster error to the backend's sentinels,
// with any password scrubbed from the message.
func (m *Backend) kubeError(err error, doing string, secrets ...string) error {
	msg := err.Error()
	for _, s := range secrets {
		msg = scrub(msg, s)
	}
	switch {
	case errors.Is(err, mgmt.ErrKindNotServed):
		return fault.New(baremetal.ErrUnavailable, "could not %s: the management cluster does not serve BareMetalHost; install baremetal-operator's CRDs", doing)
	case apierrors.IsNotFound(err):
		return fault.New(baremetal.ErrHostNotFound, "could not %s: %s", doing, msg)
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fault.New(baremetal.ErrConflict, "could not %s: %s", doing, msg)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return fault.New(baremetal.ErrInvalidHost, "could not %s: the management cluster refused it: %s", doing, msg)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return fault.New(baremetal.ErrUnavailable, "could not %s: Magnetite's management-cluster credentials are not allowed to: %s", doing, msg)
	}
	return fault.New(baremetal.ErrUnavailable, "could not %s: %s", doing, msg)
}

// scrub masks a secret and its base64 form in a message.
func scrub(msg, secret string) string {
	if secret == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, secret, bmc.PasswordMask)
	return strings.ReplaceAll(msg, base64.StdEncoding.EncodeToString([]byte(secret)), bmc.PasswordMask)
}

// hostFromBMH is the inventory's view of a BareMetalHost, its status as
// baremetal-operator last wrote it.
func hostFromBMH(u *unstructured.Unstructured) *baremetal.Host {
	str := func(path ...string) string { s, _, _ := unstructured.NestedString(u.Object, path...); return s }
	h := &baremetal.Host{
		ID: string(u.GetUID()), Name: u.GetName(), CreatedAt: u.GetCreationTimestamp().Time,
		HostSettings: baremetal.HostSettings{TargetState: baremetal.TargetAvailable,
			BootMACAddress: str("spec", "bootMACAddress"), BootMode: str("spec", "bootMode"),
			CleaningMode: str("spec", "automatedCleaningMode"), Labels: map[string]string{}},
		BMCAddress: str("spec", "bmc", "address"), BackendState: str("status", "provisioning", "state"),
		OperationalStatus: str("status", "operationalStatus"), ErrorType: str("status", "errorType"),
		ErrorMessage: str("status", "errorMessage"), PowerState: "unknown",
		ProjectID: u.GetAnnotations()[annProject], Namespace: u.GetNamespace(),
	}
	if a, err := bmc.Parse(h.BMCAddress); err == nil {
		h.HardwareType, h.BootMethod, h.NeedsProvisioningNetwork = a.HardwareType, a.BootMethod, a.NeedsProvisioningNetwork
	}
	if h.BootMode == "" {
		h.BootMode = baremetal.BootModeUEFI
	}
	if h.CleaningMode == "" {
		h.CleaningMode = baremetal.CleaningMetadata
	}
	for k, v := range u.GetLabels() {
		switch {
		case k == LabelResourceClass:
			h.ResourceClass = v
		case k == mgmt.LabelManagedBy:
			h.Managed = v == mgmt.ManagedByValue
		case !strings.HasPrefix(k, "magnetite.io/"):
			h.Labels[k] = v
		}
	}
	ann := u.GetAnnotations()
	h.BMCUsername = ann[annBMCUsername]
	if _, ok := ann[annDetached]; ok || h.OperationalStatus == baremetal.OperationalDetached {
		h.Detached, h.DetachedReason = true, ann[annDetachReason]
	}
	if on, found, _ := unstructured.NestedBool(u.Object, "status", "poweredOn"); found {
		h.PowerState = map[bool]string{true: "on", false: "off"}[on]
	}
	if n, found, _ := unstructured.NestedInt64(u.Object, "status", "errorCount"); found {
		h.ErrorCount = int(n)
	}
	if hints, ok, _ := unstructured.NestedMap(u.Object, "spec", "rootDeviceHints"); ok {
		h.RootDeviceHints = rootDeviceHintsFrom(hints)
	}
	h.Hardware = bmhHardware(u, h.RootDeviceHints)
	if t, err := metav1Time(str("status", "operationHistory", "inspect", "end")); err == nil && t != nil {
		h.InspectedAt = t
	}
	if t, err := metav1Time(str("status", "lastUpdated")); err == nil && t != nil {
		h.UpdatedAt = t
	}
	if kind := str("spec", "consumerRef", "kind"); kind != "" {
		h.Consumer = kind + " " + str("spec", "consumerRef", "namespace") + "/" + str("spec", "consumerRef", "name")
	}
	h.State = metal3State(h.BackendState)
	if u.GetDeletionTimestamp() != nil {
		h.DeleteRequested, h.State = true, baremetal.StateDeleting
	}
	// Counted as Cluster API Provider Metal3 would claim it: available, no
	// consumer, not detached, paused, failing or being deleted.
	_, paused := ann[annPaused]
	h.Deployed = h.Consumer != "" || h.State == baremetal.StateProvisioned
	h.Free = h.BackendState == bmhAvailable && h.Consumer == "" && !h.Detached && !paused && !h.DeleteRequested &&
		h.OperationalStatus != baremetal.OperationalError
	return h
}

func metal3State(s string) string {
	switch s {
	case bmhNone, bmhRegistering:
		return baremetal.StateRegistering
	case bmhUnmanaged:
		return baremetal.StateUnmanaged
	case bmhInspecting:
		return baremetal.StateInspecting
	case bmhMatchProfile, bmhPreparing:
		return baremetal.StatePreparing
	case bmhReady, bmhAvailable:
		return baremetal.StateAvailable
	case bmhProvisioning:
		return baremetal.StateProvisioning
	case bmhProvisioned, bmhExternallyProvisioned:
		return baremetal.StateProvisioned
	case bmhDeprovisioning:
		return baremetal.StateDeprovisioning
	case bmhPoweringOffForDelete, bmhDeleting:
		return baremetal.StateDeleting
	}
	return baremetal.StateUnknown
}

func rootDeviceHintsFrom(m map[string]any) *baremetal.RootDeviceHints {
	s := func(k string) string { v, _ := m[k].(string); return v }
	h := &baremetal.RootDeviceHints{DeviceName: s("deviceName"), HCTL: s("hctl"), Model: s("model"), Vendor: s("vendor"),
		SerialNumber: s("serialNumber"), WWN: s("wwn"), WWNWithExtension: s("wwnWithExtension"), WWNVendorExtension: s("wwnVendorExtension")}
	if n, ok := m["minSizeGigabytes"].(int64); ok {
		h.MinSizeGigabytes = int(n)
	}
	if r, ok := m["rotational"].(bool); ok {
		h.Rotational = &r
	}
	return h
}

// bmhHardware summarises status.hardware. The local disk is the root
// device hint's disk when it names one, else the smallest disk of at least
// 4 GiB, which is the disk Ironic picks without hints.
func bmhHardware(u *unstructured.Unstructured, hints *baremetal.RootDeviceHints) *baremetal.HostHardware {
	hw, ok, _ := unstructured.NestedMap(u.Object, "status", "hardware")
	if !ok {
		return nil
	}
	out := &baremetal.HostHardware{}
	out.CPUArch, _, _ = unstructured.NestedString(hw, "cpu", "arch")
	if n, ok, _ := unstructured.NestedInt64(hw, "cpu", "count"); ok {
		out.CPUCount = int(n)
	}
	if n, ok, _ := unstructured.NestedInt64(hw, "ramMebibytes"); ok {
		out.MemoryMiB = int(n)
	}
	disks, _, _ := unstructured.NestedSlice(hw, "storage")
	type disk struct {
		name string
		size int64
	}
	var ds []disk
	for _, d := range disks {
		dm, _ := d.(map[string]any)
		size, _ := dm["sizeBytes"].(int64)
		name, _ := dm["name"].(string)
		ds = append(ds, disk{name, size})
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].size < ds[j].size })
	for _, d := range ds {
		if hints != nil && hints.DeviceName != "" {
			if d.name == hints.DeviceName {
				out.LocalDiskGiB = int(d.size >> 30)
			}
			continue
		}
		if d.size >= 4<<30 {
			out.LocalDiskGiB = int(d.size >> 30)
			break
		}
	}
	if *out == (baremetal.HostHardware{}) {
		return nil
	}
	return out
}

func metav1Time(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}
