package mgmt

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Severity of a finding.
const (
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Finding is something about the management-cluster setup an operator
// should fix; the doctor command lists them and the server logs them.
type Finding struct {
	Severity string `json:"severity"`
	// Check names what was checked, e.g. "kubeconfig-permissions".
	Check   string `json:"check"`
	Message string `json:"message"`
}

// CheckKubeconfigPermissions reports a finding when the kubeconfig at path
// can be read or written by anyone but its owner: it usually holds
// cluster-admin credentials for the management cluster.
func CheckKubeconfigPermissions(path string) (*Finding, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("mgmt: [management] kubeconfig: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &Finding{Severity: SeverityWarning, Check: "kubeconfig-permissions", Message: fmt.Sprintf(
			"management kubeconfig %s has mode %04o: group or others can use its management-cluster credentials; run chmod 0600 %s",
			path, perm, path)}, nil
	}
	return nil, nil
}

// loadKubeconfig reads the kubeconfig at path (its current context); an
// empty path means the in-cluster service account when running in a pod.
func loadKubeconfig(path string) (*rest.Config, []Finding, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, nil, fmt.Errorf("mgmt: [management] kubeconfig is not set and Magnetite is not running in a pod: %w", err)
		}
		return cfg, nil, nil
	}
	var findings []Finding
	f, err := CheckKubeconfigPermissions(path)
	if err != nil {
		return nil, nil, err
	}
	if f != nil {
		findings = append(findings, *f)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, findings, fmt.Errorf("mgmt: read [management] kubeconfig %s: %w", path, err)
	}
	return cfg, findings, nil
}
