package cloud

import (
	"encoding/json"
	"strings"
)

// ServiceMessage is the message of an OpenStack service's error body, in
// whichever envelope the service uses: Nova's and Cinder's
// {"badRequest": {"message": ...}}, Neutron's {"NeutronError": {"message":
// ...}}, Octavia's {"faultstring": ...}, Keystone's {"error": {"message":
// ...}}; anything else is returned trimmed.
func ServiceMessage(body []byte) string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) == nil {
		var s string
		if json.Unmarshal(doc["faultstring"], &s) == nil && s != "" {
			return s
		}
		for _, v := range doc {
			var inner struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			}
			if json.Unmarshal(v, &inner) == nil && inner.Message != "" {
				if inner.Type != "" {
					return inner.Type + ": " + inner.Message
				}
				return inner.Message
			}
		}
	}
	return strings.TrimSpace(string(body))
}
