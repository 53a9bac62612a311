package driver

import (
	"errors"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/model"
)

type fakeDriver struct {
	name string
	keys []Key
}

func (f fakeDriver) Name() string                    { return f.name }
func (f fakeDriver) Provides() []Key                 { return f.keys }
func (f fakeDriver) Kinds() []kinds.Kind             { return nil }
func (f fakeDriver) Render(Request) (*Result, error) { return &Result{}, nil }

func keys(sts []model.ServerType, oss []string) []Key {
	var out []Key
	for _, st := range sts {
		for _, os := range oss {
			out = append(out, Key{ServerType: st, OSDistro: os, COE: "kubernetes"})
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func newTestRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	both := []model.ServerType{model.ServerTypeVM, model.ServerTypeBM}
	if err := r.Register(fakeDriver{"capi-openstack", keys(both, []string{"ubuntu", "flatcar"})}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterExplicit(fakeDriver{"capi-inmemory", keys(both, []string{"ubuntu", "flatcar"})}); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryFindsDriverByTuple(t *testing.T) {
	r := newTestRegistry(t)
	for _, st := range []model.ServerType{model.ServerTypeVM, model.ServerTypeBM} {
		ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes",
			ServerType: st, ClusterDistro: ptr("ubuntu")}}
		d, err := r.ForTemplate(ct, "")
		if err != nil || d.Name() != "capi-openstack" {
			t.Errorf("%s: got %v, %v", st, d, err)
		}
	}
	// The image's os_distro wins over the template's guess.
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes",
		ServerType: model.ServerTypeBM, ClusterDistro: ptr("debian")}}
	if _, err := r.ForTemplate(ct, "Flatcar"); err != nil {
		t.Errorf("image os_distro not used: %v", err)
	}
}

func TestRegistryRefusesUnknownTupleNamingIt(t *testing.T) {
	r := newTestRegistry(t)
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes",
		ServerType: model.ServerTypeBM, ClusterDistro: ptr("fedora-coreos")}}
	_, err := r.ForTemplate(ct, "")
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"server_type=bm, os_distro=fedora-coreos, coe=kubernetes", "supported: server_type bm|vm × os_distro flatcar|ubuntu × coe kubernetes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should contain %q", err, want)
		}
	}
	_, err = r.ForTemplate(&model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes"}}, "")
	if err == nil || !strings.Contains(err.Error(), "os_distro=(unknown: set cluster_distro") {
		t.Errorf("unknown distro: %v", err)
	}
}

func TestExplicitDriverIsOnlyChosenByName(t *testing.T) {
	r := newTestRegistry(t)
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes",
		ServerType: model.ServerTypeVM, ClusterDistro: ptr("ubuntu")}, Driver: ptr("capi-inmemory")}
	d, err := r.ForTemplate(ct, "")
	if err != nil || d.Name() != "capi-inmemory" {
		t.Fatalf("got %v, %v", d, err)
	}
	ct.Driver = ptr("k8s_cluster_api_ubuntu")
	if _, err := r.ForTemplate(ct, ""); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), `"k8s_cluster_api_ubuntu" is not available; available drivers: capi-inmemory, capi-openstack`) {
		t.Errorf("unknown driver name: %v", err)
	}
	ct.Driver, ct.ClusterDistro = ptr("capi-inmemory"), ptr("debian")
	if _, err := r.ForTemplate(ct, ""); err == nil || !strings.Contains(err.Error(), "does not provide server_type=vm, os_distro=debian") {
		t.Errorf("named driver without the tuple: %v", err)
	}
	if err := r.Register(fakeDriver{name: "capi-inmemory"}); err == nil {
		t.Error("duplicate name accepted")
	}
}
