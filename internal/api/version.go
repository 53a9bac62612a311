package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// APIVersion is a Magnum microversion.
type APIVersion struct{ Major, Minor int }

func (v APIVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v is minor or newer. Refusals go through
// requireVersion; AtLeast itself only shapes answers (which fields a view
// shows, which status a missing template gets).
func (v APIVersion) AtLeast(minor int) bool { return v.Minor >= minor }

// The microversion range Magnetite serves: Magnum's 1.1 to 1.14.
var (
	MinVersion = APIVersion{1, 1}
	MaxVersion = APIVersion{1, 14}
)

const (
	versionHeader    = "OpenStack-API-Version"
	minVersionHeader = "OpenStack-API-Minimum-Version"
	maxVersionHeader = "OpenStack-API-Maximum-Version"
	serviceType      = "container-infra"
)

var serviceNames = map[string]bool{
	"container-infrastructure-management": true, "container-infrastructure": true, "container-infra": true,
}

func notAcceptable(detail string) *apiError {
	return &apiError{Status: http.StatusNotAcceptable, Title: "Requested microversion is unsupported",
		Detail: detail, Code: "magnum.microversion-unsupported"}
}

// negotiateVersion reads the requested microversion. No header means the
// minimum (1.1), as in Magnum; "latest" means the maximum.
func negotiateVersion(h http.Header) (APIVersion, *apiError) {
	raw := strings.TrimSpace(h.Get(versionHeader))
	if raw == "" {
		return MinVersion, nil
	}
	// A header may list several services; pick ours.
	for _, part := range strings.Split(raw, ",") {
		fields := strings.Fields(part)
		if len(fields) != 2 {
			if len(fields) == 1 && serviceNames[fields[0]] {
				return APIVersion{}, notAcceptable(fmt.Sprintf("Invalid value for %s header: %q has no version; send for example \"%s 1.10\" or \"%s latest\".", versionHeader, raw, serviceType, serviceType))
			}
			continue
		}
		if !serviceNames[strings.ToLower(fields[0])] {
			continue
		}
		if strings.EqualFold(fields[1], "latest") {
			return MaxVersion, nil
		}
		nums := strings.Split(fields[1], ".")
		if len(nums) != 2 {
			return APIVersion{}, notAcceptable(fmt.Sprintf("Invalid value for %s header: %q; send MAJOR.MINOR, for example \"%s 1.10\".", versionHeader, fields[1], serviceType))
		}
		major, err1 := strconv.Atoi(nums[0])
		minor, err2 := strconv.Atoi(nums[1])
		if err1 != nil || err2 != nil || major < 0 || minor < 0 {
			return APIVersion{}, notAcceptable(fmt.Sprintf("Invalid value for %s header: %q; send MAJOR.MINOR, for example \"%s 1.10\".", versionHeader, fields[1], serviceType))
		}
		v := APIVersion{major, minor}
		if major != 1 {
			return APIVersion{}, notAcceptable(fmt.Sprintf("Mutually exclusive versions requested. Version %s requested but not supported by this service. The supported version range is: [%s, %s].", v, MinVersion, MaxVersion))
		}
		if minor < MinVersion.Minor || minor > MaxVersion.Minor {
			return APIVersion{}, notAcceptable(fmt.Sprintf("Version %s was requested but the minor version is not supported by this service. The supported version range is: [%s, %s].", v, MinVersion, MaxVersion))
		}
		return v, nil
	}
	return APIVersion{}, notAcceptable(fmt.Sprintf("Invalid service type for %s header: %q; use \"%s X.Y\".", versionHeader, raw, serviceType))
}

type versionKey struct{}

func withVersion(ctx context.Context, v APIVersion) context.Context {
	return context.WithValue(ctx, versionKey{}, v)
}

func versionOf(ctx context.Context) APIVersion {
	if v, ok := ctx.Value(versionKey{}).(APIVersion); ok {
		return v
	}
	return MinVersion
}

// since is something a microversion introduced that a request below it is
// refused: a route Magnum did not have then (406, Magnum's
// microversion-unsupported error, naming the route) or a behaviour of an
// existing route (400 with Magnum's sentence from refuse).
type since struct {
	minor  int
	route  string
	refuse func(v APIVersion) *apiError
}

// The microversions a request can be refused for. Fields introduced by a
// microversion carry theirs in their schema (field.minVersion).
var (
	sinceResize             = since{minor: 7, route: "resize"}
	sinceUpgrade            = since{minor: 7, route: "upgrade"}
	sinceNodeGroups         = since{minor: 9, route: "nodegroups"}
	sinceCredentialRotation = since{minor: 12, route: "credential rotation"}
	// Magnum 1.7 routed upgrade but refused it.
	sinceUpgradeRuns = since{minor: 8, refuse: func(v APIVersion) *apiError {
		return badRequest("Cluster upgrade is not supported in microversion %s; use container-infra 1.8 or newer.", v)
	}}
	sinceZeroNodes = since{minor: 10, refuse: func(v APIVersion) *apiError {
		return badRequest("Resizing a nodegroup to zero is not supported in the provided microversion (%s); node_count 0 needs container-infra 1.10 or newer.", v)
	}}
)

// requireNodeCount refuses node_count 0 below the microversion that allows
// it.
func requireNodeCount(r *http.Request, n int) *apiError {
	if n != 0 {
		return nil
	}
	return requireVersion(r, sinceZeroNodes)
}

// requireVersion is the one microversion check: it refuses a request below
// the microversion that introduced what it asks for.
func requireVersion(r *http.Request, s since) *apiError {
	v := versionOf(r.Context())
	if v.AtLeast(s.minor) {
		return nil
	}
	if s.refuse != nil {
		return s.refuse(v)
	}
	return notAcceptable(fmt.Sprintf("Version %s was requested but the requested API %s is not supported for this version; it needs %s 1.%d or newer.", v, s.route, serviceType, s.minor))
}
