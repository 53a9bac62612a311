package capacity_test

import (
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/config"
)

func TestFromConfigReadsItsOptions(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		// ok checks the check built; says is the error expected instead.
		ok   func(cc *capacity.Check) bool
		says string
	}{
		{name: "default", ok: func(cc *capacity.Check) bool {
			return cc != nil && cc.Mode == capacity.CheckRefuse && cc.Flavors == nil && cc.DefaultResourceClass == "baremetal"
		}},
		{name: "warn with Nova", env: []string{"MAGNETITE_BAREMETAL_CAPACITY_CHECK=warn", "MAGNETITE_BAREMETAL_COMPUTE_ENDPOINT=http://nova:8774/v2.1"},
			ok: func(cc *capacity.Check) bool { return cc != nil && cc.Mode == capacity.CheckWarn && cc.Flavors != nil }},
		{name: "off", env: []string{"MAGNETITE_BAREMETAL_CAPACITY_CHECK=off"}, ok: func(cc *capacity.Check) bool { return cc == nil }},
		{name: "bad mode", env: []string{"MAGNETITE_BAREMETAL_CAPACITY_CHECK=sometimes"}, says: "must be refuse, warn or off"},
		{name: "bad endpoint", env: []string{"MAGNETITE_BAREMETAL_COMPUTE_ENDPOINT=nova:8774"}, says: "compute_endpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load("", "", tc.env)
			if err != nil {
				t.Fatal(err)
			}
			cc, err := capacity.FromConfig(cfg, inventory{}, nil, nil)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("error %v, want one saying %q", err, tc.says)
				}
				return
			}
			if err != nil || !tc.ok(cc) {
				t.Fatalf("check = %+v, %v", cc, err)
			}
			// Without an inventory there is nothing to check.
			if cc, err := capacity.FromConfig(cfg, nil, nil, nil); err != nil || cc != nil {
				t.Errorf("no inventory: %+v, %v", cc, err)
			}
		})
	}
}
