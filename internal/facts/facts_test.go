package facts

import "testing"

func TestFlavorBareMetalDetection(t *testing.T) {
	cases := []struct {
		specs map[string]string
		want  string
	}{
		{map[string]string{"resources:CUSTOM_BAREMETAL": "1", "resources:VCPU": "0"}, "resources:CUSTOM_BAREMETAL=1"},
		{map[string]string{"resources:CUSTOM_GPU_NODE": " 1 "}, "resources:CUSTOM_GPU_NODE=1"},
		{map[string]string{"baremetal": "True"}, "baremetal=true"},
		{map[string]string{"resources:CUSTOM_BAREMETAL": "0"}, ""},
		{map[string]string{"hw:cpu_policy": "dedicated"}, ""},
		{nil, ""},
	}
	for _, c := range cases {
		got, ok := Flavor{ExtraSpecs: c.specs}.BareMetal()
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%v: got %q, %v", c.specs, got, ok)
		}
	}
}

func TestFactsLookupByIDThenUniqueName(t *testing.T) {
	f := &Facts{Flavors: []Flavor{{ID: "1", Name: "small"}, {ID: "2", Name: "dup"}, {ID: "3", Name: "dup"}, {ID: "small", Name: "x"}}}
	if fl, ok := f.Flavor("small"); !ok || fl.ID != "small" {
		t.Errorf("ID must win over name: %+v", fl)
	}
	if fl, ok := f.Flavor("1"); !ok || fl.Name != "small" {
		t.Errorf("by id: %+v", fl)
	}
	if _, ok := f.Flavor("dup"); ok {
		t.Error("ambiguous name resolved")
	}
	var nilFacts *Facts
	if _, ok := nilFacts.Image("x"); ok {
		t.Error("nil facts found an image")
	}
}
