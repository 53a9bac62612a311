package testenv

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig is the one way tests write a kubeconfig: cfg's server,
// CA, bearer token and client certificate as one cluster, user and
// context (in namespace, when not empty), at path with mode set past the
// umask. An empty path is a new file in a temporary directory of the
// test. It returns the path.
func WriteKubeconfig(t TB, path string, cfg *rest.Config, namespace string, mode os.FileMode) string {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "kubeconfig")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["management"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["magnetite"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["management"] = &clientcmdapi.Context{Cluster: "management", AuthInfo: "magnetite", Namespace: namespace}
	kc.CurrentContext = "management"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// KubeconfigFile writes an admin kubeconfig for the API server (mode 0600)
// and returns its path, for programs the test starts.
func (s *APIServer) KubeconfigFile(t TB) string {
	t.Helper()
	return WriteKubeconfig(t, "", s.Config, "", 0o600)
}
