package cloud

import "testing"

// TestADriversCloudsYAMLIsReadForItsApplicationCredential: the cloud an
// adopted cluster acts in is read from the clouds.yaml its driver wrote
// (magnum-cluster-api's, with endpoint_type and verify); anything but an
// application credential is refused.
func TestADriversCloudsYAMLIsReadForItsApplicationCredential(t *testing.T) {
	got, err := ParseCloudsYAML([]byte(`clouds:
  default:
    region_name: RegionOne
    endpoint_type: internal
    identity_api_version: 3
    verify: false
    auth:
      auth_url: https://keystone.example.net/v3
      application_credential_id: ac-1
      application_credential_secret: s3cret
`), nil, "")
	want := DriverCloud{AuthURL: "https://keystone.example.net/v3", Region: "RegionOne", Interface: "internal",
		CredentialID: "ac-1", CredentialSecret: "s3cret", Insecure: true}
	if err != nil || got.AuthURL != want.AuthURL || got.Region != want.Region || got.Interface != want.Interface ||
		got.CredentialID != want.CredentialID || got.CredentialSecret != want.CredentialSecret || got.Insecure != want.Insecure {
		t.Errorf("read %+v (%v), want %+v", got, err, want)
	}
	only, err := ParseCloudsYAML([]byte("clouds:\n  openstack:\n    auth: {auth_url: https://k/v3, application_credential_id: a, application_credential_secret: s}\n"), []byte("ca"), "")
	if err != nil || only.Interface != "public" || only.Insecure || string(only.CACert) != "ca" {
		t.Errorf("a clouds.yaml of one cloud named otherwise: %+v (%v)", only, err)
	}
	named, err := ParseCloudsYAML([]byte("clouds:\n  openstack:\n    auth: {auth_url: https://k/v3, application_credential_id: a, application_credential_secret: s}\n  other: {}\n"), nil, "openstack")
	if err != nil || named.CredentialID != "a" {
		t.Errorf("the cloud a machine template names: %+v (%v)", named, err)
	}
	if _, err := ParseCloudsYAML([]byte("clouds:\n  default:\n    auth: {auth_url: https://k/v3, application_credential_id: a, application_credential_secret: s}\n"), nil, "openstack"); err == nil {
		t.Error("a cloud the clouds.yaml does not have was read")
	}
	for name, doc := range map[string]string{
		"a password":     "clouds:\n  default:\n    auth: {auth_url: https://k/v3, username: admin, password: x}\n",
		"two clouds":     "clouds:\n  a: {auth: {auth_url: https://k/v3, application_credential_id: a, application_credential_secret: s}}\n  b: {}\n",
		"no clouds.yaml": "",
		"not YAML":       "clouds: [",
	} {
		if _, err := ParseCloudsYAML([]byte(doc), nil, ""); err == nil {
			t.Errorf("%s read as an application credential", name)
		}
	}
}
