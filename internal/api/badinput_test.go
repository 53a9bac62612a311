package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// badCase is one request the API must refuse with a Magnum error document.
// Paths and bodies may name fixtures as {tpl}, {cl} and so on.
type badCase struct {
	name         string
	method, path string
	headers      map[string]string // added to the default admin caller; "" removes
	body         string
	status       int
	detail       string // substring of errors[0].detail
}

// Caller headers for the table.
func hdr(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func at(v string) map[string]string { return hdr("OpenStack-API-Version", "container-infra "+v) }

func member(project string) map[string]string {
	return hdr("X-Project-Id", project, "X-Roles", "member")
}

func memberAt(project, v string) map[string]string {
	m := member(project)
	m["OpenStack-API-Version"] = "container-infra " + v
	return m
}

var reader = hdr("X-Roles", "reader")

// tplBody is a valid template create body with extra members (a JSON
// fragment such as `"name": 1`) appended or, when they repeat a key,
// overriding it.
// tplBody is a valid template body with extra fields, which replace the
// defaults they name (a body never carries one key twice).
func tplBody(extra string) string {
	body := `{`
	for _, kv := range []string{`"coe": "kubernetes", `, `"image_id": "ubuntu-2204-kube-v1.30.4", `} {
		if !strings.Contains(extra, kv[:strings.Index(kv, ":")]) {
			body += kv
		}
	}
	return body + extra + `}`
}

func clBody(extra string) string { return `{"cluster_template_id": "{tpl}", ` + extra + `}` }

func ngBody(extra string) string { return `{"name": "more", ` + extra + `}` }

func patch(op, path, value string) string {
	if value == "" {
		return fmt.Sprintf(`[{"op": %q, "path": %q}]`, op, path)
	}
	return fmt.Sprintf(`[{"op": %q, "path": %q, "value": %s}]`, op, path, value)
}

const (
	tplPath   = "/v1/clustertemplates/{tpl}"
	clPath    = "/v1/clusters/{cl}"
	ngPath    = "/v1/clusters/{cl}/nodegroups"
	resize    = "/v1/clusters/{cl}/actions/resize"
	upgrade   = "/v1/clusters/{cl}/actions/upgrade"
	quotaPath = "/v1/quotas/full/Cluster"
)

func badInputCases() []badCase {
	long := func(n int) string { return strings.Repeat("a", n) }
	huge := `{"name": "` + strings.Repeat("x", 2<<20) + `"}`
	return []badCase{
		// Template create: wrong JSON types for every field kind.
		{"template name is a number", "POST", "/v1/clustertemplates", nil, tplBody(`"name": 123`), 400, "name. Value: 123. expected a string"},
		{"template image_id is a bool", "POST", "/v1/clustertemplates", nil, tplBody(`"image_id": true`), 400, "image_id"},
		{"template keypair_id is an object", "POST", "/v1/clustertemplates", nil, tplBody(`"keypair_id": {}`), 400, "keypair_id"},
		{"template apiserver_port is a word", "POST", "/v1/clustertemplates", nil, tplBody(`"apiserver_port": "https"`), 400, "apiserver_port"},
		{"template apiserver_port is a fraction", "POST", "/v1/clustertemplates", nil, tplBody(`"apiserver_port": 6443.5`), 400, "whole number"},
		{"template docker_volume_size is a list", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_volume_size": [10]`), 400, "docker_volume_size"},
		{"template public is a word", "POST", "/v1/clustertemplates", nil, tplBody(`"public": "maybe"`), 400, "Expected a boolean"},
		{"template tls_disabled is 2", "POST", "/v1/clustertemplates", nil, tplBody(`"tls_disabled": 2`), 400, "tls_disabled"},
		{"template master_lb_enabled is an object", "POST", "/v1/clustertemplates", nil, tplBody(`"master_lb_enabled": {}`), 400, "master_lb_enabled"},
		{"template floating_ip_enabled is a list", "POST", "/v1/clustertemplates", nil, tplBody(`"floating_ip_enabled": [true]`), 400, "floating_ip_enabled"},
		{"template labels are a key=value string", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": "kube_tag=v1.30.4"`), 400, "labels"},
		{"template labels are a list", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": ["kube_tag"]`), 400, "labels must be an object"},
		{"template labels are a number", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": 7`), 400, "labels"},
		{"template label value is an object", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": {"a": {"b": 1}}`), 400, "string, number or boolean"},
		{"template label value is a list", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": {"a": [1]}`), 400, "string, number or boolean"},
		{"template label value is null", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": {"a": null}`), 400, "must not be null"},
		{"template label key is empty", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": {"": "x"}`), 400, "must not be empty"},
		{"template labels string is a broken dict", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": "{'a': }"`), 400, "labels"},
		{"template server_type is a number", "POST", "/v1/clustertemplates", nil, tplBody(`"server_type": 1`), 400, "server_type"},
		{"template coe is null", "POST", "/v1/clustertemplates", nil, tplBody(`"coe": null`), 400, "coe. Value: null. Mandatory field missing"},
		// Template create: out-of-range numbers.
		{"template apiserver_port 80", "POST", "/v1/clustertemplates", nil, tplBody(`"apiserver_port": 80`), 400, "greater or equal to 1024"},
		{"template apiserver_port 70000", "POST", "/v1/clustertemplates", nil, tplBody(`"apiserver_port": 70000`), 400, "lower or equal to 65535"},
		{"template apiserver_port negative", "POST", "/v1/clustertemplates", nil, tplBody(`"apiserver_port": -6443`), 400, "apiserver_port"},
		{"template docker_volume_size 0", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_volume_size": 0`), 400, "greater or equal to 1"},
		{"template docker_volume_size negative", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_volume_size": -5`), 400, "greater or equal to 1"},
		{"template docker_volume_size beyond int32", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_volume_size": 2147483648`), 400, "out of range"},
		{"template docker_volume_size beyond int64", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_volume_size": 99999999999999999999999`), 400, "docker_volume_size"},
		{"template docker_volume_size in exponent form", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_volume_size": 1e400`), 400, "docker_volume_size"},
		// Template create: names, unknown and read-only attributes.
		{"template name empty", "POST", "/v1/clustertemplates", nil, tplBody(`"name": ""`), 400, "1 to 255 characters"},
		{"template name 256 characters", "POST", "/v1/clustertemplates", nil, tplBody(`"name": "` + long(256) + `"`), 400, "1 to 255 characters"},
		{"template unknown attribute", "POST", "/v1/clustertemplates", nil, tplBody(`"flavour": "m1.small"`), 400, "Unknown attribute for argument cluster_template: flavour"},
		{"template uuid is read-only", "POST", "/v1/clustertemplates", nil, tplBody(`"uuid": "0562d357-8641-4759-8fed-8173f02c9633"`), 400, "uuid is a read-only attribute"},
		{"template project_id is read-only", "POST", "/v1/clustertemplates", nil, tplBody(`"project_id": "other"`), 400, "project_id is a read-only attribute"},
		{"template created_at is read-only", "POST", "/v1/clustertemplates", nil, tplBody(`"created_at": "2016-08-29T02:08:08+00:00"`), 400, "created_at is a read-only attribute"},
		{"template links are read-only", "POST", "/v1/clustertemplates", nil, tplBody(`"links": []`), 400, "links is a read-only attribute"},
		// Template create: mandatory fields and enums.
		{"template without coe", "POST", "/v1/clustertemplates", nil, `{"image_id": "img"}`, 400, "coe. Value: null. Mandatory field missing"},
		{"template without image_id", "POST", "/v1/clustertemplates", nil, `{"coe": "kubernetes"}`, 400, "image_id. Value: null. Mandatory field missing"},
		{"template empty object", "POST", "/v1/clustertemplates", nil, `{}`, 400, "Mandatory field missing"},
		{"template coe swarm", "POST", "/v1/clustertemplates", nil, tplBody(`"coe": "swarm"`), 400, "Value should be one of: kubernetes"},
		{"template server_type container", "POST", "/v1/clustertemplates", nil, tplBody(`"server_type": "container"`), 400, "one of: vm, bm"},
		{"template network_driver weave", "POST", "/v1/clustertemplates", nil, tplBody(`"network_driver": "weave"`), 400, "calico, cilium, flannel"},
		{"template volume_driver rexray", "POST", "/v1/clustertemplates", nil, tplBody(`"volume_driver": "rexray"`), 400, "one of: cinder"},
		// Template create: cross-field rules.
		{"template dns_nameserver is a host name", "POST", "/v1/clustertemplates", nil, tplBody(`"dns_nameserver": "dns.example.com"`), 400, "dns_nameserver"},
		{"template dns_nameserver list with a bad entry", "POST", "/v1/clustertemplates", nil, tplBody(`"dns_nameserver": "8.8.8.8,not-an-ip"`), 400, "comma-separated list of IP addresses"},
		{"template http_proxy without scheme", "POST", "/v1/clustertemplates", nil, tplBody(`"http_proxy": "proxy.example.com:3128"`), 400, "http_proxy"},
		{"template https_proxy with ftp scheme", "POST", "/v1/clustertemplates", nil, tplBody(`"https_proxy": "ftp://proxy.example.com"`), 400, "https_proxy"},
		{"template devicemapper with docker_volume_size 1", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_storage_driver": "devicemapper", "docker_volume_size": 1`), 400, "minimum value 3GB for devicemapper"},
		{"template devicemapper without docker_volume_size", "POST", "/v1/clustertemplates", nil, tplBody(`"docker_storage_driver": "devicemapper"`), 400, "minimum value 3GB for devicemapper"},
		// Template create: who may.
		{"member cannot create a public template", "POST", "/v1/clustertemplates", member("projb"), tplBody(`"public": true`), 403, "public or hidden"},
		{"member cannot create a hidden template", "POST", "/v1/clustertemplates", member("projb"), tplBody(`"hidden": true`), 403, "public or hidden"},
		{"reader cannot create a template", "POST", "/v1/clustertemplates", reader, tplBody(`"name": "r"`), 403, "clustertemplate:create"},
		// Malformed bodies.
		{"template body empty", "POST", "/v1/clustertemplates", nil, ``, 400, "body is empty"},
		{"template body truncated", "POST", "/v1/clustertemplates", nil, `{"coe": "kubernetes"`, 400, "not a valid JSON object"},
		{"template body is an array", "POST", "/v1/clustertemplates", nil, `[]`, 400, "not a valid JSON object"},
		{"template body is null", "POST", "/v1/clustertemplates", nil, `null`, 400, "not null"},
		{"template body is a string", "POST", "/v1/clustertemplates", nil, `"kubernetes"`, 400, "not a valid JSON object"},
		{"template body has a second object", "POST", "/v1/clustertemplates", nil, tplBody(`"name": "a"`) + ` {}`, 400, "data after the JSON object"},
		{"template body has trailing garbage", "POST", "/v1/clustertemplates", nil, tplBody(`"name": "a"`) + `garbage`, 400, "data after the JSON object"},
		{"template body too large", "POST", "/v1/clustertemplates", nil, huge, 413, "larger than"},
		// Template patch.
		{"template patch /uuid", "PATCH", tplPath, nil, patch("replace", "/uuid", `"x"`), 400, "'/uuid' is an internal attribute"},
		{"template patch /project_id", "PATCH", tplPath, nil, patch("replace", "/project_id", `"other"`), 400, "'/project_id' is an internal attribute"},
		{"template patch /created_at", "PATCH", tplPath, nil, patch("replace", "/created_at", `"2020-01-01T00:00:00+00:00"`), 400, "'/created_at' is an internal attribute"},
		{"template patch /links", "PATCH", tplPath, nil, patch("remove", "/links", ""), 400, "'/links' is an internal attribute"},
		{"template patch removes /coe", "PATCH", tplPath, nil, patch("remove", "/coe", ""), 400, "'/coe' is a mandatory attribute and can not be removed"},
		{"template patch removes /image_id", "PATCH", tplPath, nil, patch("remove", "/image_id", ""), 400, "'/image_id' is a mandatory attribute"},
		{"template patch removes /server_type", "PATCH", tplPath, nil, patch("remove", "/server_type", ""), 400, "'/server_type' is a mandatory attribute"},
		{"template patch op move", "PATCH", tplPath, nil, `[{"op": "move", "from": "/name", "path": "/tags"}]`, 400, "unknown member \"from\""},
		{"template patch op test", "PATCH", tplPath, nil, patch("test", "/name", `"free"`), 400, "Magnum accepts add, replace and remove"},
		{"template patch op copy", "PATCH", tplPath, nil, patch("copy", "/name", `"x"`), 400, "Magnum accepts add, replace and remove"},
		{"template patch op missing", "PATCH", tplPath, nil, `[{"path": "/name", "value": "x"}]`, 400, "needs \"op\""},
		{"template patch op is a number", "PATCH", tplPath, nil, `[{"op": 1, "path": "/name", "value": "x"}]`, 400, "needs \"op\""},
		{"template patch path without slash", "PATCH", tplPath, nil, patch("replace", "name", `"x"`), 400, "needs a \"path\""},
		{"template patch path is the root", "PATCH", tplPath, nil, patch("replace", "/", `"x"`), 400, "needs a \"path\""},
		{"template patch path with a trailing slash", "PATCH", tplPath, nil, patch("replace", "/name/", `"x"`), 400, "needs a \"path\""},
		{"template patch path with a space", "PATCH", tplPath, nil, patch("replace", "/na me", `"x"`), 400, "needs a \"path\""},
		{"template patch path is missing", "PATCH", tplPath, nil, `[{"op": "replace", "value": "x"}]`, 400, "needs a \"path\""},
		{"template patch add on an existing attribute", "PATCH", tplPath, nil, patch("add", "/name", `"x"`), 400, "please use 'replace'"},
		{"template patch add a new root attribute", "PATCH", tplPath, nil, patch("add", "/flavour", `"x"`), 400, "/flavour"},
		{"template patch replace without value", "PATCH", tplPath, nil, patch("replace", "/name", ""), 400, "need a value"},
		{"template patch replace with null", "PATCH", tplPath, nil, patch("replace", "/name", "null"), 400, "need a value"},
		{"template patch apiserver_port 80", "PATCH", tplPath, nil, patch("replace", "/apiserver_port", "80"), 400, "greater or equal to 1024"},
		{"template patch apiserver_port word", "PATCH", tplPath, nil, patch("replace", "/apiserver_port", `"https"`), 400, "apiserver_port"},
		{"template patch coe swarm", "PATCH", tplPath, nil, patch("replace", "/coe", `"swarm"`), 400, "one of: kubernetes"},
		{"template patch network_driver weave", "PATCH", tplPath, nil, patch("replace", "/network_driver", `"weave"`), 400, "calico, cilium, flannel"},
		{"template patch labels number", "PATCH", tplPath, nil, patch("replace", "/labels", "5"), 400, "labels"},
		{"template patch dns_nameserver host name", "PATCH", tplPath, nil, patch("replace", "/dns_nameserver", `"dns.example.com"`), 400, "dns_nameserver"},
		{"template patch unknown attribute", "PATCH", tplPath, nil, patch("replace", "/flavour", `"x"`), 400, "/flavour"},
		{"template patch empty name", "PATCH", tplPath, nil, patch("replace", "/name", `""`), 400, "name"},
		{"template patch is an object", "PATCH", tplPath, nil, `{"op": "replace", "path": "/name", "value": "x"}`, 400, "must be a JSON array"},
		{"template patch is empty", "PATCH", tplPath, nil, `[]`, 400, "the patch is empty"},
		{"template patch is null", "PATCH", tplPath, nil, `null`, 400, "the patch is empty"},
		{"template patch has trailing garbage", "PATCH", tplPath, nil, patch("replace", "/name", `"x"`) + ` ]`, 400, "unexpected data after the patch array"},
		{"template patch element is not an object", "PATCH", tplPath, nil, `["replace"]`, 400, "must be a JSON array"},
		{"template patch element is null", "PATCH", tplPath, nil, `[null]`, 400, "operation 0 is not an object"},
		{"member cannot publish own template", "PATCH", "/v1/clustertemplates/{tplB}", member("projb"), patch("replace", "/public", "true"), 403, "public or hidden"},
		// Templates in use and other projects' templates.
		{"template in use: image_id cannot change", "PATCH", "/v1/clustertemplates/{inuse}", nil, patch("replace", "/image_id", `"other"`), 400, "used by 1 cluster(s)"},
		{"template in use: labels cannot change", "PATCH", "/v1/clustertemplates/{inuse}", nil, patch("add", "/labels/kube_tag", `"v1.31.0"`), 400, "Only the name, public, hidden or tags"},
		{"template in use cannot be deleted", "DELETE", "/v1/clustertemplates/{inuse}", nil, ``, 400, "used by 1 cluster(s)"},
		{"other project cannot read a private template", "GET", tplPath, member("projb"), ``, 404, "could not be found"},
		{"other project cannot read a hidden template", "GET", "/v1/clustertemplates/{hidden}", member("projb"), ``, 404, "could not be found"},
		{"other project cannot update a public template", "PATCH", "/v1/clustertemplates/{pub}", member("projb"), patch("replace", "/name", `"mine"`), 403, "clustertemplate:update"},
		{"other project cannot delete a public template", "DELETE", "/v1/clustertemplates/{pub}", member("projb"), ``, 403, "clustertemplate:delete"},
		{"other project cannot delete a private template", "DELETE", tplPath, member("projb"), ``, 404, "could not be found"},
		{"unknown template", "GET", "/v1/clustertemplates/nope", nil, ``, 404, "nope"},
		{"reader cannot delete a template", "DELETE", tplPath, reader, ``, 403, "clustertemplate:delete"},

		// Cluster create: names.
		{"cluster name starts with a digit", "POST", "/v1/clusters", nil, clBody(`"name": "1cluster"`), 400, "must start with a letter"},
		{"cluster name has a space", "POST", "/v1/clusters", nil, clBody(`"name": "my cluster"`), 400, "must start with a letter"},
		{"cluster name has a slash", "POST", "/v1/clusters", nil, clBody(`"name": "a/b"`), 400, "must start with a letter"},
		{"cluster name 243 characters", "POST", "/v1/clusters", nil, clBody(`"name": "` + long(243) + `"`), 400, "1 to 242 characters"},
		{"cluster name is a number", "POST", "/v1/clusters", nil, clBody(`"name": 5`), 400, "expected a string"},
		// Cluster create: types and ranges.
		{"cluster node_count negative", "POST", "/v1/clusters", nil, clBody(`"node_count": -1`), 400, "node_count. Value: -1. Value should be greater or equal to 0"},
		{"cluster master_count 0", "POST", "/v1/clusters", nil, clBody(`"master_count": 0`), 400, "master_count. Value: 0. Value should be greater or equal to 1"},
		{"cluster master_count negative", "POST", "/v1/clusters", nil, clBody(`"master_count": -3`), 400, "greater or equal to 1"},
		{"cluster node_count word", "POST", "/v1/clusters", nil, clBody(`"node_count": "many"`), 400, "whole number"},
		{"cluster node_count bool", "POST", "/v1/clusters", nil, clBody(`"node_count": true`), 400, "whole number"},
		{"cluster node_count exponent", "POST", "/v1/clusters", nil, clBody(`"node_count": 1e3`), 400, "whole number"},
		{"cluster node_count huge", "POST", "/v1/clusters", nil, clBody(`"node_count": 9999999999`), 400, "out of range"},
		{"cluster create_timeout negative", "POST", "/v1/clusters", nil, clBody(`"create_timeout": -1`), 400, "create_timeout"},
		{"cluster docker_volume_size 0", "POST", "/v1/clusters", nil, clBody(`"docker_volume_size": 0`), 400, "greater or equal to 1"},
		{"cluster master_lb_enabled word", "POST", "/v1/clusters", nil, clBody(`"master_lb_enabled": "perhaps"`), 400, "Expected a boolean"},
		{"cluster merge_labels number", "POST", "/v1/clusters", nil, clBody(`"merge_labels": 3`), 400, "merge_labels"},
		{"cluster keypair list", "POST", "/v1/clusters", nil, clBody(`"keypair": ["kp"]`), 400, "keypair"},
		{"cluster labels string", "POST", "/v1/clusters", nil, clBody(`"labels": "kube_tag"`), 400, "labels"},
		{"cluster labels nested object", "POST", "/v1/clusters", nil, clBody(`"labels": {"k": {"nested": 1}}`), 400, "string, number or boolean"},
		{"cluster labels bad min_node_count", "POST", "/v1/clusters", nil, clBody(`"labels": {"min_node_count": "x"}`), 400, "min_node_count"},
		{"cluster node_count above max_node_count label", "POST", "/v1/clusters", nil, clBody(`"node_count": 5, "labels": {"max_node_count": 2}`), 400, "outside the range"},
		// Cluster create: attributes.
		{"cluster unknown attribute", "POST", "/v1/clusters", nil, clBody(`"bogus": 1`), 400, "Unknown attribute for argument cluster: bogus"},
		{"cluster status is read-only", "POST", "/v1/clusters", nil, clBody(`"status": "CREATE_COMPLETE"`), 400, "status is a read-only attribute"},
		{"cluster uuid is read-only", "POST", "/v1/clusters", nil, clBody(`"uuid": "746e779a-751a-456b-a3e9-c883d734946f"`), 400, "uuid is a read-only attribute"},
		{"cluster api_address is read-only", "POST", "/v1/clusters", nil, clBody(`"api_address": "https://1.2.3.4:6443"`), 400, "api_address is a read-only attribute"},
		{"cluster stack_id is read-only", "POST", "/v1/clusters", nil, clBody(`"stack_id": "x"`), 400, "stack_id is a read-only attribute"},
		{"cluster without template", "POST", "/v1/clusters", nil, `{"name": "x"}`, 400, "cluster_template_id. Value: null. Mandatory field missing"},
		{"cluster template null", "POST", "/v1/clusters", nil, `{"cluster_template_id": null}`, 400, "Mandatory field missing"},
		{"cluster body truncated", "POST", "/v1/clusters", nil, `{"cluster_template_id":`, 400, "not a valid JSON object"},
		{"cluster body too large", "POST", "/v1/clusters", nil, huge, 413, "larger than"},
		// Cluster create: templates, versions and rules.
		{"unknown template below 1.10 is a bad request", "POST", "/v1/clusters", at("1.9"), `{"cluster_template_id": "nope"}`, 400, "ClusterTemplate nope could not be found"},
		{"unknown template from 1.10 is not found", "POST", "/v1/clusters", at("1.10"), `{"cluster_template_id": "nope"}`, 404, "ClusterTemplate nope could not be found"},
		{"other project's private template", "POST", "/v1/clusters", member("projb"), clBody(`"name": "b"`), 404, "could not be found"},
		{"other project's hidden template", "POST", "/v1/clusters", member("projb"), `{"cluster_template_id": "{hidden}"}`, 404, "could not be found"},
		{"zero nodes at 1.9", "POST", "/v1/clusters", at("1.9"), clBody(`"node_count": 0`), 400, "node_count 0 needs container-infra 1.10"},
		{"several masters without a load balancer", "POST", "/v1/clusters", nil, clBody(`"master_count": 3`), 400, "master_count must be 1 when master_lb_enabled is False"},
		{"cluster devicemapper with docker_volume_size 1", "POST", "/v1/clusters", nil, `{"cluster_template_id": "{dm}", "docker_volume_size": 1}`, 400, "minimum value 3GB for devicemapper"},
		{"reader cannot create a cluster", "POST", "/v1/clusters", reader, clBody(`"name": "r"`), 403, "cluster:create"},
		{"quota exceeded", "POST", "/v1/clusters", member("full"), `{"cluster_template_id": "{pub}"}`, 403, "maximum clusters per project, 1"},

		// Cluster patch.
		{"cluster patch /name", "PATCH", clPath, nil, patch("replace", "/name", `"renamed"`), 400, "cannot change cluster property(ies) name"},
		{"cluster patch /uuid", "PATCH", clPath, nil, patch("replace", "/uuid", `"x"`), 400, "'/uuid' is an internal attribute"},
		{"cluster patch /project_id", "PATCH", clPath, nil, patch("replace", "/project_id", `"x"`), 400, "'/project_id' is an internal attribute"},
		{"cluster patch /created_at", "PATCH", clPath, nil, patch("replace", "/created_at", `"x"`), 400, "'/created_at' is an internal attribute"},
		{"cluster patch /api_address", "PATCH", clPath, nil, patch("replace", "/api_address", `"https://1.2.3.4:6443"`), 400, "'/api_address' is an internal attribute"},
		{"cluster patch /stack_id", "PATCH", clPath, nil, patch("replace", "/stack_id", `"x"`), 400, "'/stack_id' is an internal attribute"},
		{"cluster patch removes /cluster_template_id", "PATCH", clPath, nil, patch("remove", "/cluster_template_id", ""), 400, "'/cluster_template_id' is a mandatory attribute"},
		{"cluster patch removes /name", "PATCH", clPath, nil, patch("remove", "/name", ""), 400, "'/name' is a mandatory attribute"},
		{"cluster patch master_count", "PATCH", clPath, nil, patch("replace", "/master_count", "3"), 400, "cannot change cluster property(ies) master_count"},
		{"cluster patch labels", "PATCH", clPath, nil, patch("add", "/labels/kube_tag", `"v1.31.0"`), 400, "cannot change cluster property(ies) labels"},
		{"cluster patch unknown attribute", "PATCH", clPath, nil, patch("replace", "/bogus", "1"), 400, "'/bogus'"},
		{"cluster patch node_count negative", "PATCH", clPath, nil, patch("replace", "/node_count", "-1"), 400, "greater or equal to 0"},
		{"cluster patch node_count word", "PATCH", clPath, nil, patch("replace", "/node_count", `"two"`), 400, "whole number"},
		{"cluster patch node_count 0 at 1.9", "PATCH", clPath, at("1.9"), patch("replace", "/node_count", "0"), 400, "node_count 0 needs container-infra 1.10"},
		{"cluster patch add existing node_count", "PATCH", clPath, nil, patch("add", "/node_count", "2"), 400, "please use 'replace'"},
		{"cluster patch remove node_count", "PATCH", clPath, nil, patch("remove", "/node_count", ""), 400, "'/node_count' is a mandatory attribute"},
		{"cluster patch health_status unknown value", "PATCH", clPath, nil, patch("replace", "/health_status", `"GREAT"`), 400, "HEALTHY, UNHEALTHY, UNKNOWN"},
		{"cluster patch health_status_reason number", "PATCH", clPath, nil, patch("replace", "/health_status_reason", "5"), 400, "health_status_reason"},
		{"cluster patch op move", "PATCH", clPath, nil, patch("move", "/node_count", "2"), 400, "Magnum accepts add, replace and remove"},
		{"cluster patch path malformed", "PATCH", clPath, nil, patch("replace", "node_count", "2"), 400, "needs a \"path\""},
		{"cluster patch path with a double slash", "PATCH", clPath, nil, patch("replace", "//node_count", "2"), 400, "needs a \"path\""},
		{"cluster patch is an object", "PATCH", clPath, nil, `{"op": "replace", "path": "/node_count", "value": 2}`, 400, "must be a JSON array"},
		{"cluster patch is empty", "PATCH", clPath, nil, `[]`, 400, "the patch is empty"},
		{"cluster patch is null", "PATCH", clPath, nil, `null`, 400, "the patch is empty"},
		{"cluster patch has trailing garbage", "PATCH", clPath, nil, patch("replace", "/node_count", "2") + `x`, 400, "unexpected data after the patch array"},
		{"cluster patch is not JSON", "PATCH", clPath, nil, `node_count=2`, 400, "must be a JSON array"},
		{"cluster patch rollback not a bool", "PATCH", clPath + "?rollback=maybe", nil, patch("replace", "/node_count", "2"), 400, "rollback"},
		{"reader cannot patch a cluster", "PATCH", clPath, reader, patch("replace", "/node_count", "2"), 403, "cluster:update"},
		{"reader cannot delete a cluster", "DELETE", clPath, reader, ``, 403, "cluster:delete"},
		// Other projects' clusters.
		{"other project cannot read a cluster", "GET", clPath, member("projb"), ``, 404, "could not be found"},
		{"other project cannot patch a cluster", "PATCH", clPath, member("projb"), patch("replace", "/node_count", "2"), 404, "could not be found"},
		{"other project cannot delete a cluster", "DELETE", clPath, member("projb"), ``, 404, "could not be found"},
		{"other project cannot resize a cluster", "POST", resize, memberAt("projb", "1.14"), `{"node_count": 2}`, 404, "could not be found"},
		{"other project cannot list node groups", "GET", ngPath, member("projb"), ``, 404, "could not be found"},
		{"unknown cluster", "GET", "/v1/clusters/nope", nil, ``, 404, "Cluster nope could not be found"},

		// Resize and upgrade.
		{"resize at 1.6", "POST", resize, at("1.6"), `{"node_count": 2}`, 406, "resize"},
		{"resize without node_count", "POST", resize, nil, `{"nodegroup": "default-worker"}`, 400, "node_count. Value: null. Mandatory field missing"},
		{"resize node_count negative", "POST", resize, nil, `{"node_count": -1}`, 400, "greater or equal to 0"},
		{"resize node_count word", "POST", resize, nil, `{"node_count": "two"}`, 400, "whole number"},
		{"resize node_count 0 at 1.9", "POST", resize, at("1.9"), `{"node_count": 0}`, 400, "node_count 0 needs container-infra 1.10"},
		{"resize nodes_to_remove not a list", "POST", resize, nil, `{"node_count": 1, "nodes_to_remove": "abc"}`, 400, "list of strings"},
		{"resize nodes_to_remove numbers", "POST", resize, nil, `{"node_count": 1, "nodes_to_remove": [1]}`, 400, "list of strings"},
		{"resize unknown node group", "POST", resize, nil, `{"node_count": 1, "nodegroup": "nope"}`, 404, "Nodegroup nope could not be found"},
		{"resize unknown attribute", "POST", resize, nil, `{"node_count": 1, "count": 2}`, 400, "Unknown attribute for argument cluster_resize_req: count"},
		{"resize control plane to zero", "POST", resize, nil, `{"node_count": 0, "nodegroup": "default-master"}`, 400, "needs at least one node"},
		{"resize control plane removing nodes", "POST", resize, nil, `{"node_count": 1, "nodegroup": "default-master", "nodes_to_remove": ["m-0"]}`, 400, "control plane"},
		{"resize body not an object", "POST", resize, nil, `[2]`, 400, "not a valid JSON object"},
		{"upgrade at 1.6", "POST", upgrade, at("1.6"), `{"cluster_template": "{tpl}"}`, 406, "upgrade"},
		{"upgrade at 1.7", "POST", upgrade, at("1.7"), `{"cluster_template": "{tpl}"}`, 400, "1.8 or newer"},
		{"upgrade without template", "POST", upgrade, nil, `{"max_batch_size": 1}`, 400, "cluster_template. Value: null. Mandatory field missing"},
		{"upgrade unknown template", "POST", upgrade, nil, `{"cluster_template": "nope"}`, 404, "nope"},
		{"upgrade max_batch_size 0", "POST", upgrade, nil, `{"cluster_template": "{tpl}", "max_batch_size": 0}`, 400, "greater or equal to 1"},
		{"upgrade non-default node group to another template", "POST", upgrade, nil, `{"cluster_template": "{tpl}", "nodegroup": "ng1"}`, 400, "can be upgraded only to match cluster's template"},

		// Node groups.
		{"node groups at 1.8", "GET", ngPath, at("1.8"), ``, 406, "nodegroups"},
		{"node group create at 1.8", "POST", ngPath, at("1.8"), ngBody(`"node_count": 1`), 406, "nodegroups"},
		{"node group without name", "POST", ngPath, nil, `{"node_count": 1}`, 400, "name. Value: null. Mandatory field missing"},
		{"node group name starts with a dash", "POST", ngPath, nil, `{"name": "-bad"}`, 400, "node group name must start"},
		{"node group role master", "POST", ngPath, nil, ngBody(`"role": "master"`), 400, "Creating master nodegroups is currently not supported"},
		{"node group min above max", "POST", ngPath, nil, ngBody(`"min_node_count": 3, "max_node_count": 2, "node_count": 2`), 409, "min_node_count (3) should be less or equal to max_node_count (2)"},
		{"node group node_count above max", "POST", ngPath, nil, ngBody(`"node_count": 5, "max_node_count": 2`), 409, "node_count (5) should be less or equal to max_node_count (2)"},
		{"node group node_count below min", "POST", ngPath, nil, ngBody(`"node_count": 1, "min_node_count": 2`), 409, "min_node_count (2) should be less or equal to node_count (1)"},
		{"node group node_count negative", "POST", ngPath, nil, ngBody(`"node_count": -2`), 400, "greater or equal to 0"},
		{"node group zero nodes at 1.9", "POST", ngPath, at("1.9"), ngBody(`"node_count": 0`), 400, "node_count 0 needs container-infra 1.10"},
		{"node group duplicate name", "POST", ngPath, nil, `{"name": "ng1"}`, 409, "already exists"},
		{"node group duplicate of default worker", "POST", ngPath, nil, `{"name": "default-worker"}`, 409, "already exists"},
		{"node group node_labels at 1.13", "POST", ngPath, at("1.13"), ngBody(`"node_labels": {"a": "b"}`), 400, "node_labels needs microversion 1.14"},
		{"node group node_taints at 1.13", "POST", ngPath, at("1.13"), ngBody(`"node_taints": []`), 400, "node_taints needs microversion 1.14"},
		{"node group restricted node label", "POST", ngPath, at("1.14"), ngBody(`"node_labels": {"kubernetes.io/foo": "bar"}`), 409, "restricted Kubernetes namespace"},
		{"node group reserved node label", "POST", ngPath, nil, ngBody(`"node_labels": {"magnetite.io/role": "x"}`), 409, "reserved"},
		{"node group node label value too long", "POST", ngPath, nil, ngBody(`"node_labels": {"a": "` + long(64) + `"}`), 409, "at most 63"},
		{"node group node label value not a string", "POST", ngPath, nil, ngBody(`"node_labels": {"a": 1}`), 400, "must be a string"},
		{"node group bad taint effect", "POST", ngPath, nil, ngBody(`"node_taints": [{"key": "gpu", "effect": "NoRun"}]`), 400, "effect must be one of NoSchedule, PreferNoSchedule, NoExecute"},
		{"node group taint without key", "POST", ngPath, nil, ngBody(`"node_taints": [{"effect": "NoSchedule"}]`), 400, "missing the required 'key'"},
		{"node group taint with unknown field", "POST", ngPath, nil, ngBody(`"node_taints": [{"key": "a", "effect": "NoSchedule", "operator": "Exists"}]`), 400, "unrecognised field(s) operator"},
		{"node group taints are an object", "POST", ngPath, nil, ngBody(`"node_taints": {"key": "a"}`), 400, "must be a list"},
		{"node group taint key invalid", "POST", ngPath, nil, ngBody(`"node_taints": [{"key": "bad key", "effect": "NoSchedule"}]`), 409, "node_taints"},
		{"delete default worker node group", "DELETE", ngPath + "/default-worker", nil, ``, 400, "Deleting a default nodegroup is not supported"},
		{"delete default master node group", "DELETE", ngPath + "/default-master", nil, ``, 400, "Deleting a default nodegroup is not supported"},
		{"node group patch /name", "PATCH", ngPath + "/ng1", nil, patch("replace", "/name", `"x"`), 400, "'/name' is an internal attribute"},
		{"node group patch /node_count", "PATCH", ngPath + "/ng1", nil, patch("replace", "/node_count", "3"), 400, "'/node_count' is an internal attribute"},
		{"node group patch min above node_count", "PATCH", ngPath + "/ng1", nil, patch("replace", "/min_node_count", "5"), 409, "min_node_count (5) should be less or equal to node_count (1)"},
		{"node group patch op move", "PATCH", ngPath + "/ng1", nil, patch("move", "/max_node_count", "5"), 400, "Magnum accepts add, replace and remove"},
		{"unknown node group", "GET", ngPath + "/nope", nil, ``, 404, "Nodegroup nope could not be found"},

		// Microversions.
		{"microversion 1.0", "GET", "/v1/clusters", at("1.0"), ``, 406, "[1.1, 1.14]"},
		{"microversion 1.15", "GET", "/v1/clusters", at("1.15"), ``, 406, "[1.1, 1.14]"},
		{"microversion 2.1", "GET", "/v1/clusters", at("2.1"), ``, 406, "[1.1, 1.14]"},
		{"microversion abc", "GET", "/v1/clusters", at("abc"), ``, 406, "MAJOR.MINOR"},
		{"microversion 1.x", "GET", "/v1/clusters", at("1.x"), ``, 406, "MAJOR.MINOR"},
		{"microversion of another service", "GET", "/v1/clusters", hdr("OpenStack-API-Version", "compute 1.5"), ``, 406, "Invalid service type"},
		{"microversion without a version", "GET", "/v1/clusters", hdr("OpenStack-API-Version", "container-infra"), ``, 406, "has no version"},

		// Pagination.
		{"limit 0", "GET", "/v1/clusters?limit=0", nil, ``, 400, "Limit must be positive"},
		{"limit -1", "GET", "/v1/clusters?limit=-1", nil, ``, 400, "Limit must be positive"},
		{"limit abc", "GET", "/v1/clusters?limit=abc", nil, ``, 400, "limit"},
		{"sort_dir up", "GET", "/v1/clusters?sort_dir=up", nil, ``, 400, "Invalid sort direction: up"},
		{"sort_key nonsense", "GET", "/v1/clusters?sort_key=nonsense", nil, ``, 400, "\"nonsense\" is an invalid field for sorting"},
		{"sort_key SQL", "GET", "/v1/clusters?sort_key=name%3Bdrop", nil, ``, 400, "invalid field for sorting"},
		{"marker unknown", "GET", "/v1/clusters?marker=0562d357-8641-4759-8fed-8173f02c9633", nil, ``, 400, "marker 0562d357-8641-4759-8fed-8173f02c9633"},
		{"template limit 0", "GET", "/v1/clustertemplates/detail?limit=0", nil, ``, 400, "Limit must be positive"},
		{"template sort_key nonsense", "GET", "/v1/clustertemplates?sort_key=nonsense", nil, ``, 400, "invalid field for sorting"},
		{"template marker unknown", "GET", "/v1/clustertemplates?marker=nope", nil, ``, 400, "marker nope"},
		{"node group sort_dir up", "GET", ngPath + "?sort_dir=up", nil, ``, 400, "Invalid sort direction"},
		{"node group marker unknown", "GET", ngPath + "?marker=nope", nil, ``, 400, "marker nope"},
		{"quota limit abc", "GET", "/v1/quotas?limit=abc", nil, ``, 400, "limit"},
		{"quota marker unknown", "GET", "/v1/quotas?marker=999999", nil, ``, 400, "marker 999999"},

		// Quotas, stats and services.
		{"member cannot create a quota", "POST", "/v1/quotas", member("projb"), `{"project_id": "projb", "resource": "Cluster", "hard_limit": 50}`, 403, "quota:create"},
		{"member cannot update a quota", "PATCH", quotaPath, member("full"), `{"hard_limit": 50}`, 403, "quota:update"},
		{"member cannot delete a quota", "DELETE", quotaPath, member("full"), ``, 403, "quota:delete"},
		{"quota without project", "POST", "/v1/quotas", nil, `{"resource": "Cluster", "hard_limit": 5}`, 400, "Must provide a valid project ID"},
		{"quota for another resource", "POST", "/v1/quotas", nil, `{"project_id": "p", "resource": "Node", "hard_limit": 5}`, 400, "one of: Cluster"},
		{"quota hard_limit negative", "POST", "/v1/quotas", nil, `{"project_id": "p", "resource": "Cluster", "hard_limit": -1}`, 400, "greater or equal to 0"},
		{"quota hard_limit word", "POST", "/v1/quotas", nil, `{"project_id": "p", "resource": "Cluster", "hard_limit": "lots"}`, 400, "whole number"},
		{"quota unknown attribute", "POST", "/v1/quotas", nil, `{"project_id": "p", "resource": "Cluster", "limit": 1}`, 400, "Unknown attribute for argument quota: limit"},
		{"quota duplicate", "POST", "/v1/quotas", nil, `{"project_id": "full", "resource": "Cluster", "hard_limit": 3}`, 409, "already exists"},
		{"quota update unknown project", "PATCH", "/v1/quotas/nobody/Cluster", nil, `{"hard_limit": 3}`, 404, "nobody"},
		{"quota update without hard_limit", "PATCH", quotaPath, nil, `{"resource": "Cluster"}`, 400, "hard_limit. Value: null. Mandatory field missing"},
		{"quota update body malformed", "PATCH", quotaPath, nil, `{"hard_limit": }`, 400, "not a valid JSON object"},
		{"quota of another project", "GET", "/v1/quotas/full/Cluster", member("projb"), ``, 403, "full"},
		{"quota of another resource", "GET", "/v1/quotas/projb/Node", nil, ``, 404, "Node"},
		{"quota delete unknown", "DELETE", "/v1/quotas/nobody/Cluster", nil, ``, 404, "nobody"},
		{"stats of an unknown type", "GET", "/v1/stats?type=bay", nil, ``, 400, "Invalid stats type"},
		{"stats of another project", "GET", "/v1/stats?project_id=full", member("projb"), ``, 403, "stats:get_all"},
		{"member cannot list services", "GET", "/v1/mservices", member("projb"), ``, 403, "magnum-service:get_all"},

		// Sizes, names and bodies a client cannot mean.
		{"cluster node_count of a billion", "POST", "/v1/clusters", nil, clBody(`"node_count": 1000000000`), 400, "node_count. Value: 1000000000. Value should be lower or equal to 5000"},
		{"cluster of more nodes than Kubernetes supports", "POST", "/v1/clusters", nil, clBody(`"node_count": 4999, "master_count": 3, "master_lb_enabled": true`), 400, "would have 5002 nodes"},
		{"resize past 5000 nodes", "POST", resize, nil, `{"node_count": 5001}`, 400, "lower or equal to 5000"},
		{"node group max_node_count of a billion", "POST", ngPath, nil, ngBody(`"max_node_count": 1000000000`), 400, "max_node_count"},
		{"template name with a newline", "POST", "/v1/clustertemplates", nil, tplBody(`"name": "k8s\nFAKE LOG LINE"`), 400, "control characters"},
		{"template name with NUL", "POST", "/v1/clustertemplates", nil, tplBody(`"name": "k8s\u0000"`), 400, "control characters"},
		{"node group name with a tab", "POST", ngPath, nil, `{"name": "tab\there"}`, 400, "control characters"},
		{"template patch name with a newline", "PATCH", tplPath, nil, patch("replace", "/name", `"a\nb"`), 400, "control characters"},
		{"template with a duplicate key", "POST", "/v1/clustertemplates", nil, `{"coe": "kubernetes", "image_id": "a", "image_id": "b"}`, 400, `key "image_id" twice`},
		{"template with a duplicate label key", "POST", "/v1/clustertemplates", nil, tplBody(`"labels": {"kube_tag": "v1.30.4", "kube_tag": "v1.31.0"}`), 400, `key "kube_tag" twice`},
		{"template posted as text/plain", "POST", "/v1/clustertemplates", map[string]string{"Content-Type": "text/plain"}, tplBody(`"name": "form"`), 415, "Content-Type: application/json"},
		{"template posted as a form", "POST", "/v1/clustertemplates", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `coe=kubernetes&image_id=x`, 415, "must be JSON"},
		{"resize the control plane to 2 without a load balancer", "POST", "/v1/clusters/{nolb}/actions/resize", nil, `{"node_count": 2, "nodegroup": "default-master"}`, 400, "master_count must be 1 when master_lb_enabled is False"},
		{"path with an empty segment", "GET", "//v1//clusters", nil, ``, 404, "could not be found"},
		{"path with a dot-dot segment", "GET", "/v1/clusters/../clustertemplates", nil, ``, 404, "could not be found"},

		// Routing.
		{"unknown collection", "GET", "/v1/pods", nil, ``, 404, "could not be found"},
		{"unknown API version path", "GET", "/v2/clusters", nil, ``, 404, "could not be found"},
		{"method without a route", "PUT", clPath, nil, `{}`, 404, "PUT"},
	}
}

// fixtures creates the objects the bad-input table refers to and returns
// the replacer for their placeholders.
func fixtures(t *testing.T, c *client) *strings.Replacer {
	tpl := c.createTemplate(map[string]any{"name": "free"})
	inuse := c.createTemplate(map[string]any{"name": "inuse", "master_lb_enabled": true})
	pub := c.createTemplate(map[string]any{"name": "pub", "public": true})
	hidden := c.createTemplate(map[string]any{"name": "hid", "public": true, "hidden": true})
	dm := c.createTemplate(map[string]any{"name": "dm", "docker_storage_driver": "devicemapper", "docker_volume_size": 3})
	tplB := c.as("projb", "member").createTemplate(map[string]any{"name": "b-own"})
	cl := c.createCluster(inuse, map[string]any{"name": "c1"})
	single := c.createTemplate(map[string]any{"name": "single"})
	nolb := c.createCluster(single, map[string]any{"name": "c-nolb"})
	c.must(http.StatusAccepted, "POST", "/v1/clusters/"+cl+"/nodegroups", map[string]any{"name": "ng1"})
	c.must(http.StatusCreated, "POST", "/v1/quotas", map[string]any{"project_id": "full", "resource": "Cluster", "hard_limit": 1})
	c.as("full", "member").createCluster(pub, nil)
	return strings.NewReplacer("{tpl}", tpl, "{inuse}", inuse, "{pub}", pub, "{hidden}", hidden, "{dm}", dm,
		"{tplB}", tplB, "{cl}", cl, "{nolb}", nolb)
}

// snapshot is everything an admin can read; a refused request must leave
// it unchanged.
func snapshot(t *testing.T, srv *testapi.Server, c *client, cluster string) string {
	var b bytes.Buffer
	for _, p := range []string{"/v1/clusters/detail", "/v1/clustertemplates/detail", "/v1/quotas?all_tenants=true",
		"/v1/clusters/" + cluster + "/nodegroups"} {
		b.Write(c.must(http.StatusOK, "GET", p, nil).Body)
	}
	list, err := srv.Store.OperationsForCluster(context.Background(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "operations=%d", len(list))
	return b.String()
}

func TestBadInputGetsMagnumErrors(t *testing.T) {
	srv := testapi.Start(t)
	admin := newClient(t, srv)
	fill := fixtures(t, admin)
	cluster := fill.Replace("{cl}")
	before := snapshot(t, srv, admin, cluster)
	cases := badInputCases()
	if len(cases) < 120 {
		t.Fatalf("only %d cases", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			adm := &client{t: t, srv: srv, headers: admin.headers}
			c := adm
			for k, v := range tc.headers {
				c = c.with(k, v)
			}
			var body any
			if tc.body != "" {
				body = fill.Replace(tc.body)
			}
			r := c.do(tc.method, fill.Replace(tc.path), body)
			if r.Status >= 500 {
				t.Fatalf("server error %d: %s", r.Status, r.Body)
			}
			if r.Status != tc.status {
				t.Errorf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			assertMagnumError(t, r, tc.detail)
			if after := snapshot(t, srv, adm, cluster); after != before {
				t.Errorf("refused request changed state: %s", firstDifference(before, after))
				before = after
			}
		})
	}
}

// assertMagnumError checks r is Magnum's error document carrying detail.
func assertMagnumError(t *testing.T, r *response, detail string) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	var doc map[string][]map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &doc); err != nil || len(doc) != 1 || len(doc["errors"]) != 1 {
		t.Fatalf("body is not {\"errors\": [one item]}: %v: %s", err, r.Body)
	}
	item := doc["errors"][0]
	for _, k := range []string{"request_id", "code", "status", "title", "detail", "links"} {
		if _, ok := item[k]; !ok {
			t.Errorf("error item lacks %q: %s", k, r.Body)
		}
	}
	var e struct {
		RequestID  string `json:"request_id"`
		Code       string `json:"code"`
		Status     int    `json:"status"`
		Title      string `json:"title"`
		Detail     string `json:"detail"`
		Links      []any  `json:"links"`
		MinVersion string `json:"min_version"`
		MaxVersion string `json:"max_version"`
	}
	raw, _ := json.Marshal(item)
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("error item has wrong member types: %v: %s", err, r.Body)
	}
	if rid := r.Header.Get("X-Openstack-Request-Id"); e.RequestID == "" || e.RequestID != rid {
		t.Errorf("request_id %q, X-Openstack-Request-Id %q", e.RequestID, rid)
	}
	wantCode := "client"
	if r.Status == http.StatusNotAcceptable {
		wantCode = "magnum.microversion-unsupported" // as Magnum's microversion errors
	}
	if e.Status != r.Status || e.Code != wantCode || e.Title == "" || e.Links == nil {
		t.Errorf("error item status %d code %q title %q links %v (HTTP %d)", e.Status, e.Code, e.Title, e.Links, r.Status)
	}
	if !strings.Contains(e.Detail, detail) {
		t.Errorf("detail %q does not contain %q", e.Detail, detail)
	}
	if r.Status == http.StatusNotAcceptable && (e.MinVersion != "1.1" || e.MaxVersion != "1.14") {
		t.Errorf("406 carries min_version %q max_version %q, want 1.1 and 1.14", e.MinVersion, e.MaxVersion)
	}
}

// firstDifference shows where two snapshots part, with some context.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-120)
	return fmt.Sprintf("...%s... became ...%s...", a[from:min(len(a), i+40)], b[from:min(len(b), i+40)])
}
