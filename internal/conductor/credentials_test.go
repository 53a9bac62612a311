package conductor

import (
	"encoding/base64"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
)

func decoded(t *testing.T, data map[string]any, key string) string {
	t.Helper()
	enc, ok := data[key].(string)
	if !ok {
		t.Fatalf("Secret data has no %q: %v", key, data)
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCredentialSecretsCarryTheActiveCredential checks the two formats the
// OpenStack infrastructure reads: CAPO's clouds.yaml (with the CA bundle)
// and the ClusterResourceSet stream that gives the workload cluster its
// cloud.conf and, with Manila, the Manila CSI credentials.
func TestCredentialSecretsCarryTheActiveCredential(t *testing.T) {
	c := &Conductor{opts: Options{Credentials: CloudCredentials{
		AuthURL: "https://keystone.example.com/v3", RegionName: "RegionTwo", CACert: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
	}}}
	cred := &model.ClusterCredential{ID: "ac-1", Secret: "s3cr3t-value"}

	data, err := c.credentialData(driver.SecretRef{Name: "c-cloud-config", Credentials: driver.CredentialsCloudsYAML}, cred)
	if err != nil {
		t.Fatal(err)
	}
	var clouds struct {
		Clouds map[string]struct {
			Auth       map[string]string `json:"auth"`
			AuthType   string            `json:"auth_type"`
			RegionName string            `json:"region_name"`
			Interface  string            `json:"interface"`
		} `json:"clouds"`
	}
	if err := yaml.Unmarshal([]byte(decoded(t, data, "clouds.yaml")), &clouds); err != nil {
		t.Fatal(err)
	}
	os := clouds.Clouds["openstack"]
	if os.Auth["application_credential_id"] != "ac-1" || os.Auth["application_credential_secret"] != "s3cr3t-value" ||
		os.Auth["auth_url"] != "https://keystone.example.com/v3" || os.AuthType != "v3applicationcredential" ||
		os.RegionName != "RegionTwo" || os.Interface != "public" {
		t.Errorf("clouds.yaml entry = %+v", os)
	}
	if !strings.Contains(decoded(t, data, "cacert"), "BEGIN CERTIFICATE") {
		t.Error("the CA bundle is not under cacert")
	}

	ref := driver.SecretRef{Name: "c-cloud-config-addon", Credentials: driver.CredentialsCloudConfigAddon,
		CloudConf: "[LoadBalancer]\nfloating-network-id=ext-net\n", Manila: true}
	data, err = c.credentialData(ref, cred)
	if err != nil {
		t.Fatal(err)
	}
	stream := decoded(t, data, "cloud-config.yaml")
	docs := strings.Split(stream, "---\n")
	if len(docs) != 2 {
		t.Fatalf("the addon stream has %d documents, want cloud-config and manila-csi-credentials:\n%s", len(docs), stream)
	}
	var secrets []struct {
		Metadata struct{ Name, Namespace string }
		Data     map[string]any
	}
	for _, d := range docs {
		var s struct {
			Metadata struct{ Name, Namespace string }
			Data     map[string]any
		}
		if err := yaml.Unmarshal([]byte(d), &s); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, s)
	}
	if secrets[0].Metadata.Name != "cloud-config" || secrets[0].Metadata.Namespace != "kube-system" {
		t.Fatalf("first document is %+v", secrets[0].Metadata)
	}
	conf := decoded(t, secrets[0].Data, "cloud.conf")
	for _, want := range []string{"[Global]\n", "auth-url=https://keystone.example.com/v3\n", "application-credential-id=ac-1\n",
		"application-credential-secret=s3cr3t-value\n", "region=RegionTwo\n", "ca-file=/etc/config/ca.crt\n", "os-endpoint-type=public\n", "[LoadBalancer]\nfloating-network-id=ext-net\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("cloud.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "\ninterface=") {
		t.Errorf("cloud.conf sets interface=, which cloud-provider-openstack does not read:\n%s", conf)
	}
	if secrets[1].Metadata.Name != "manila-csi-credentials" || decoded(t, secrets[1].Data, "os-applicationCredentialSecret") != "s3cr3t-value" ||
		decoded(t, secrets[1].Data, "os-endpointType") != "public" {
		t.Errorf("Manila credentials = %+v", secrets[1])
	}

	c.opts.Credentials.AuthURL = ""
	if _, err := c.credentialData(ref, cred); err == nil || !strings.Contains(err.Error(), "auth_url") {
		t.Errorf("without Keystone's address: %v, want an error naming [cluster_credentials] auth_url", err)
	}
}
