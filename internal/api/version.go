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

// AtLeast reports whether v is minor or newer.
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

// requireVersion refuses a route below the microversion that introduced it.
func requireVersion(r *http.Request, minor int, what string) *apiError {
	v := versionOf(r.Context())
	if v.Minor < minor {
		return notAcceptable(fmt.Sprintf("Version %s was requested but the requested API %s is not supported for this version; it needs %s 1.%d or newer.", v, what, serviceType, minor))
	}
	return nil
}
