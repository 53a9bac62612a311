package api_test

import (
	"net/http"
	"testing"

	"github.com/magnetite-io/magnetite/internal/testing/testapi"
)

// Magnum validates a PATCH body before it looks the template up, so a body
// that is no JSON patch is a 400 even for a template that does not exist
// (magnum-tempest-plugin's test_update_cluster_template_invalid_patch).
func TestTemplatePatchThatIsNoPatchIsRefusedBeforeTheLookup(t *testing.T) {
	srv := testapi.Start(t)
	notAPatch := map[string]any{"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.31.2"}
	if status, body := call(t, srv, "PATCH", "/v1/clustertemplates/1b0a2b0e-3c4d-4e5f-8a9b-0c1d2e3f4a5b", notAPatch); status != http.StatusBadRequest {
		t.Errorf("a template body as PATCH of a missing template: %d %v, want 400", status, body)
	}
	patch := []map[string]any{{"op": "replace", "path": "/name", "value": "x"}}
	if status, body := call(t, srv, "PATCH", "/v1/clustertemplates/1b0a2b0e-3c4d-4e5f-8a9b-0c1d2e3f4a5b", patch); status != http.StatusNotFound {
		t.Errorf("a valid PATCH of a missing template: %d %v, want 404", status, body)
	}
}
