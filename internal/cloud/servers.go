package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/availabilityzones"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumetypes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/keypairs"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/flavor"
)

// ServerFault is what Nova recorded of why a server went to ERROR: the
// message of its fault (GET /servers/{id}, "fault"), which Nova shows to the
// server's project. It is "" when the server has no fault (or is gone, or
// the catalog lists no compute service): the caller then says what it knows.
// Released CAPO (v0.12–v0.15, controllers/openstackserver_controller.go)
// records no fault text, only that the instance is in ERROR.
func (rs *Resources) ServerFault(ctx context.Context, token, id string) (string, error) {
	var msg string
	err := rs.with(ctx, token, "compute", openstack.NewComputeV2, func(sc *gophercloud.ServiceClient) error {
		s, err := servers.Get(ctx, sc, id).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil
		}
		if err != nil {
			return unavailable(err, "Nova", "read server "+id)
		}
		msg = strings.TrimSpace(s.Fault.Message)
		return nil
	})
	return msg, err
}

// RefusalMessage is the service's own message inside an error text that
// quotes a refused request's body, as gophercloud's errors do ("Expected
// HTTP response code [202] when accessing [POST …], but got 400 instead:
// {"badRequest": …}") and CAPO records them; text without such a body is
// returned trimmed.
func RefusalMessage(text string) string {
	for i := strings.IndexByte(text, '{'); i >= 0; {
		var body json.RawMessage
		if err := json.NewDecoder(strings.NewReader(text[i:])).Decode(&body); err == nil && len(body) > 2 {
			if msg := ServiceMessage(body); msg != "" && !strings.HasPrefix(msg, "{") {
				return msg
			}
		}
		next := strings.IndexByte(text[i+1:], '{')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return strings.TrimSpace(text)
}

// ServerRefs are what one machine's server asks of the cloud, as its
// OpenStackMachine names them (names or IDs); empty fields ask nothing.
type ServerRefs struct {
	Flavor, Image, ServerGroup, Keypair string
	// VolumeType and VolumeZone are asked of Cinder for the root volume.
	VolumeType, VolumeZone string
}

// MissingServerRefs lists, in words, what refs name that the token's
// project cannot use now: nothing when a server asked for again would not
// be refused for a missing resource. A service that does not answer is
// ErrUnavailable: the caller cannot tell, and asks again later.
func (rs *Resources) MissingServerRefs(ctx context.Context, token string, refs ServerRefs) ([]string, error) {
	var missing []string
	if refs.Image != "" {
		err := rs.with(ctx, token, "image", openstack.NewImageV2, func(sc *gophercloud.ServiceClient) error {
			_, err := findImage(ctx, sc, refs.Image)
			if errors.Is(err, ErrInvalid) {
				missing = append(missing, "image "+refs.Image)
				return nil
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if refs.Flavor != "" || refs.ServerGroup != "" || refs.Keypair != "" {
		err := rs.with(ctx, token, "compute", openstack.NewComputeV2, func(sc *gophercloud.ServiceClient) error {
			if refs.Flavor != "" {
				_, err := flavor.Find(ctx, sc, refs.Flavor)
				switch {
				case errors.Is(err, flavor.ErrNotFound):
					missing = append(missing, "flavor "+refs.Flavor)
				case err != nil && !errors.Is(err, flavor.ErrNoExtraSpecs):
					return unavailable(err, "Nova", "read flavor "+refs.Flavor)
				}
			}
			if refs.ServerGroup != "" {
				sc.Microversion = serverGroupMicroversion
				err := servergroups.Get(ctx, sc, refs.ServerGroup).Err
				sc.Microversion = ""
				if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
					missing = append(missing, "server group "+refs.ServerGroup)
				} else if err != nil {
					return unavailable(err, "Nova", "read server group "+refs.ServerGroup)
				}
			}
			if refs.Keypair != "" {
				err := keypairs.Get(ctx, sc, refs.Keypair, nil).Err
				if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
					missing = append(missing, "keypair "+refs.Keypair)
				} else if err != nil {
					return unavailable(err, "Nova", "read keypair "+refs.Keypair)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if refs.VolumeType != "" || refs.VolumeZone != "" {
		err := rs.with(ctx, token, rs.blockStorageService(ctx), newBlockStorage, func(sc *gophercloud.ServiceClient) error {
			if refs.VolumeType != "" {
				types, err := listAll(ctx, volumetypes.List(sc, volumetypes.ListOpts{}), volumetypes.ExtractVolumeTypes)
				if err != nil {
					return unavailable(err, "Cinder", "list volume types")
				}
				if !slices.ContainsFunc(types, func(t volumetypes.VolumeType) bool { return t.ID == refs.VolumeType || t.Name == refs.VolumeType }) {
					missing = append(missing, "volume type "+refs.VolumeType)
				}
			}
			if refs.VolumeZone != "" {
				zones, err := listAll(ctx, availabilityzones.List(sc), availabilityzones.ExtractAvailabilityZones)
				if err != nil {
					return unavailable(err, "Cinder", "list availability zones")
				}
				if !slices.ContainsFunc(zones, func(z availabilityzones.AvailabilityZone) bool {
					return z.ZoneName == refs.VolumeZone && z.ZoneState.Available
				}) {
					missing = append(missing, "volume availability zone "+refs.VolumeZone)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return missing, nil
}

// blockStorageService is the catalog's type of Cinder's v3 API: current
// clouds list it as block-storage, older ones only as volumev3.
func (rs *Resources) blockStorageService(ctx context.Context) string {
	if _, err := rs.Catalog.Endpoint(ctx, "block-storage", "public"); errors.Is(err, auth.ErrNoEndpoint) {
		return "volumev3"
	}
	return "block-storage"
}
