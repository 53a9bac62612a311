package horizon

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testbrowser"
	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
)

// chooseOption picks, in the open form, the option shown as text of the
// select named name, waiting until the form has loaded it.
func (s *session) chooseOption(name, text string) {
	s.t.Helper()
	s.waitXPath(fmt.Sprintf("//div[contains(@class,'modal')]//select[@name=%q]/option[normalize-space(.)=%q]", name, text)).Click()
}

// tab switches the open form to its step or tab named title.
func (s *session) tab(title string) {
	s.t.Helper()
	s.waitXPath(fmt.Sprintf("//div[contains(@class,'modal')]//li/a[normalize-space(.)=%q]", title)).Click()
}

// field is a text field of the open form.
func (s *session) field(name string) testbrowser.Element {
	s.t.Helper()
	return s.waitXPath(fmt.Sprintf("//div[contains(@class,'modal')]//*[@name=%q]", name))
}

// submit submits the open form and waits until it has closed and the
// success message shows (the form closes before the request is answered),
// failing on an error the form or a toast shows.
func (s *session) submit(button, what string) {
	s.t.Helper()
	s.waitXPath(fmt.Sprintf("//div[contains(@class,'modal-footer')]//button[normalize-space(.)=%q]", button)).Click()
	s.wait(what+": the form to close and a success message", time.Minute, func() (bool, string) {
		s.noErrors(what)
		if len(s.b.XPath("//div[contains(@class,'modal-dialog')]")) > 0 {
			return false, "the form is still open"
		}
		for _, e := range s.b.Find(".alert-success") {
			if e.Displayed() {
				return true, ""
			}
		}
		return false, "no success message"
	})
	s.shot(strings.ReplaceAll(what, " ", "-") + "-done")
}

// createTemplate goes through the four steps of the Create Cluster
// Template form.
func (s *session) createTemplate() {
	s.t.Helper()
	s.waitText("button", "Create Cluster Template").Click()
	s.field("name").Type(templateName)
	s.chooseOption("coe", "Kubernetes")
	s.shot("template-form-info")
	s.tab("Node Spec")
	s.chooseOption("image_id", testcloud.ImageName)
	s.chooseOption("keypair_id", keypairName)
	s.chooseOption("flavor_id", testcloud.FlavorName)
	s.chooseOption("master_flavor_id", testcloud.MasterFlavor)
	s.shot("template-form-node-spec")
	s.tab("Network")
	s.chooseOption("external_network_id", testcloud.ExternalNet)
	// The form offers Flannel first; Cluster API clusters run Calico or
	// Cilium.
	s.chooseOption("network_driver", "Calico")
	s.shot("template-form-network")
	s.tab("Labels")
	s.field("labels").Type("kube_tag=" + testcloud.KubeTag)
	s.shot("template-form-labels")
	s.submit("Submit", "create the cluster template")
	s.waitTable("the new template in its panel", templateColumns, templateColumns, func(rows []map[string]string) bool {
		return len(rows) == 1 && rows[0]["Name"] == templateName && rows[0]["COE"] == "kubernetes" && rows[0]["Keypair"] == keypairName &&
			rows[0]["Network Driver"] == "calico"
	})
	s.shot("template-created")
}

// createCluster goes through the Create Cluster form from the clusters
// panel, with the defaults the form takes from the template.
func (s *session) createCluster() {
	s.t.Helper()
	s.open("/project/clusters/")
	s.waitTable("the empty clusters panel", clusterColumns, clusterColumns, func(rows []map[string]string) bool { return len(rows) == 0 })
	s.shot("clusters-empty")
	s.waitText("button", "Create Cluster").Click()
	s.field("name").Type(clusterName)
	s.chooseOption("cluster_template_id", templateName)
	s.chooseOption("keypair", keypairName)
	s.shot("cluster-form-details")
	s.tab("Size")
	s.field("node_count").Type("1")
	s.shot("cluster-form-size")
	s.tab("Network")
	s.shot("cluster-form-network")
	s.tab("Management")
	s.shot("cluster-form-management")
	s.submit("Submit", "create the cluster")
	s.open("/project/clusters/")
	s.waitTable("the new cluster in its panel", clusterColumns, clusterFilled, func(rows []map[string]string) bool {
		return len(rows) == 1 && rows[0]["Name"] == clusterName
	})
	s.shot("cluster-creating")
}

// clusterFilled are the cluster columns that always have a value; health
// is null until the conductor has seen the cluster's objects.
var clusterFilled = []string{"Name", "ID", "Status", "Master Count", "Node Count", "Keypair"}

// waitClusterStatus reloads the clusters panel, as a user does, until the
// cluster shows status, health and node count.
func (s *session) waitClusterStatus(status, health, nodes string, limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s.open("/project/clusters/")
		rows := s.waitTable("the cluster in its panel", clusterColumns, clusterFilled, func(rows []map[string]string) bool { return len(rows) == 1 })
		r := rows[0]
		if strings.HasSuffix(r["Status"], "_FAILED") {
			s.fail("the cluster is %s", r["Status"])
		}
		if r["Status"] == status && r["Health Status"] == health && r["Node Count"] == nodes {
			return
		}
		if time.Now().After(deadline) {
			s.fail("waited %s for the cluster to show %s, %s, %s nodes; it shows %q", limit, status, health, nodes, r)
		}
		time.Sleep(3 * time.Second) // a user's reload, not faster: each costs Horizon a second of CPU
	}
}

// stackID is how the detail page shows the cluster's Stack ID.
var stackID = regexp.MustCompile(`Stack ID\s+` + clusterName + `-[0-9a-f]{8}\s`)

// clusterDetail opens the cluster's detail page from its name.
func (s *session) clusterDetail() {
	s.t.Helper()
	s.waitXPath(fmt.Sprintf("//table//a[normalize-space(.)=%q]", clusterName)).Click()
	var text string
	s.wait("the cluster's detail page", time.Minute, func() (bool, string) {
		s.noErrors("cluster detail")
		s.b.Script(&text, "return document.body.innerText;")
		// Stack ID stays the Cluster API object's name once the conductor
		// built the cluster, as magnum-cluster-api keeps it.
		return stackID.MatchString(text) && strings.Contains(text, "CREATE_COMPLETE") && strings.Contains(text, templateName), text
	})
	s.shot("cluster-detail")
}

// rowAction runs an action of the cluster's row in the clusters panel.
func (s *session) rowAction(action string) {
	s.t.Helper()
	s.open("/project/clusters/")
	s.waitTable("the cluster in its panel", clusterColumns, clusterFilled, func(rows []map[string]string) bool { return len(rows) == 1 })
	row := fmt.Sprintf("//table//tr[td//a[normalize-space(.)=%q]]", clusterName)
	if els := s.b.XPath(row + fmt.Sprintf("//button[normalize-space(.)=%q]", action)); len(els) > 0 && els[0].Displayed() {
		els[0].Click()
		return
	}
	s.waitXPath(row + "//button[contains(@class,'dropdown-toggle')]").Click()
	s.waitXPath(row + fmt.Sprintf("//a[normalize-space(.)=%q]", action)).Click()
}

// resizeHeatError is what magnum-ui before 16.0.0 shows when its resize
// form cannot read the cluster's Heat stack: it lists the workers as Nova
// servers named after the stack, which Cluster API clusters (Magnum's
// Cluster API drivers as well as Magnetite) do not have.
const resizeHeatError = "Unable to get cluster's working nodes."

// resize resizes the default worker node group to nodes. magnum-ui 11's
// Resize Cluster form cannot open without Heat (docs/horizon.md), so the
// test checks that it says exactly that and then sends what the form
// sends on submit (node_count and the default-worker node group, to
// Horizon's resize API) through magnum-ui's own service in the page.
func (s *session) resize(nodes int) {
	s.t.Helper()
	s.rowAction("Resize Cluster")
	var shown []string
	s.wait("the resize form or its error", time.Minute, func() (bool, string) {
		shown = s.errorMessages()
		return len(shown) > 0 || len(s.b.XPath("//*[contains(@class,'modal-title')][normalize-space(.)='Resize Cluster']")) > 0, "nothing yet"
	})
	if len(shown) != 1 || !strings.Contains(shown[0], resizeHeatError) {
		s.fail("Resize Cluster: want magnum-ui 11's known error %q, the page shows %q", resizeHeatError, shown)
	}
	s.shot("resize-form-needs-heat")
	s.dismissToasts()

	id := s.clusterID()
	var status string
	s.b.Script(&status, `var magnum = angular.element(document.body).injector().get('horizon.app.core.openstack-service-api.magnum');
		var id = arguments[0], nodes = arguments[1];
		return new Promise(function(resolve) {
			magnum.resizeCluster(id, {node_count: nodes, nodegroup: 'default-worker'})
				.then(function(r) { resolve('' + r.status); }, function(e) { resolve('error ' + e.status); });
		});`, id, nodes)
	s.t.Logf("resize through magnum-ui's service: HTTP %s", status)
	s.waitClusterStatus("UPDATE_COMPLETE", "HEALTHY", fmt.Sprint(nodes), 5*time.Minute)
	s.shot("cluster-resized")
}

// dismissToasts closes the toasts the page shows.
func (s *session) dismissToasts() {
	s.t.Helper()
	s.b.Script(nil, `document.querySelectorAll('toast .alert .close').forEach(function(c) { c.click(); });`)
	s.wait("the toasts to close", 30*time.Second, func() (bool, string) {
		return len(s.errorMessages()) == 0, "still shown"
	})
}

// clusterID is the ID the clusters panel shows for the cluster.
func (s *session) clusterID() string {
	s.t.Helper()
	rows := s.waitTable("the cluster in its panel", clusterColumns, clusterFilled, func(rows []map[string]string) bool { return len(rows) == 1 })
	return strings.Join(strings.Fields(rows[0]["ID"]), "")
}

// showCertificate downloads the cluster's CA certificate.
func (s *session) showCertificate() {
	s.t.Helper()
	s.rowAction("Show Certificate")
	path := filepath.Join(s.b.Downloads, clusterName+"_ca.pem")
	s.wait("the CA certificate download", time.Minute, func() (bool, string) {
		s.noErrors("show certificate")
		b, err := os.ReadFile(path)
		return err == nil && strings.HasPrefix(string(b), "-----BEGIN CERTIFICATE-----"), fmt.Sprint(err)
	})
	s.shot("certificate-downloaded")
}

// deleteCluster deletes the cluster and waits until the panel no longer
// lists it.
func (s *session) deleteCluster() {
	s.t.Helper()
	s.rowAction("Delete Cluster")
	s.shot("cluster-delete-confirm")
	s.submit("Delete Cluster", "delete the cluster")
	// A reloaded panel shows an empty table until its list has arrived, so
	// the list is read as the panel reads it: from Horizon's API.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var listed []string
		s.b.Script(&listed, `return fetch('/api/container_infra/clusters/', {headers: {'X-Requested-With': 'XMLHttpRequest'}})
			.then(function(r) { return r.json(); })
			.then(function(j) { return j.items.map(function(c) { return c.name + ' ' + c.status; }); });`)
		if len(listed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			s.fail("the deleted cluster is still listed: %q", listed)
		}
		time.Sleep(3 * time.Second) // a user's reload
	}
	s.open("/project/clusters/")
	s.waitTable("the empty clusters panel", clusterColumns, clusterFilled, func(rows []map[string]string) bool { return len(rows) == 0 })
	s.shot("cluster-deleted")
}

// deleteTemplate deletes the template from its panel.
func (s *session) deleteTemplate() {
	s.t.Helper()
	s.open("/project/cluster_templates/")
	s.waitTable("the template in its panel", templateColumns, templateColumns, func(rows []map[string]string) bool { return len(rows) == 1 })
	row := fmt.Sprintf("//table//tr[td//a[normalize-space(.)=%q]]", templateName)
	s.waitXPath(row + "//button[contains(@class,'dropdown-toggle')]").Click()
	s.waitXPath(row + "//a[normalize-space(.)='Delete Cluster Template']").Click()
	s.submit("Delete Cluster Template", "delete the cluster template")
	s.open("/project/cluster_templates/")
	s.waitTable("the empty templates panel", templateColumns, templateColumns, func(rows []map[string]string) bool { return len(rows) == 0 })
	s.shot("template-deleted")
}
