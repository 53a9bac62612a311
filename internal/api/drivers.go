package api

import (
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
)

// DriverFinder finds the driver that builds a template's clusters
// (*driver.Registry).
type DriverFinder interface {
	ForTemplate(ct *model.ClusterTemplate, osDistro string) (driver.Driver, error)
}

// checkDriver refuses a template no driver can build, naming the
// (server_type, os_distro, coe) it asked for.
func (s *Server) checkDriver(ct *model.ClusterTemplate) error {
	if s.opts.Drivers == nil {
		return nil
	}
	// driver.ErrNoDriver answers 400 with the registry's sentence
	// (errorTable).
	_, err := s.opts.Drivers.ForTemplate(ct, "")
	return err
}

// checkTemplate runs the driver and label checks of a new or changed
// template.
func (s *Server) checkTemplate(ct *model.ClusterTemplate) error {
	if err := s.checkDriver(ct); err != nil {
		return err
	}
	return s.checkLabels(ct, ct.Labels)
}

// touchesDriver reports whether a template change can change its driver or
// its labels' validity.
func touchesDriver(changed []string) bool {
	for _, f := range changed {
		switch f {
		case "server_type", "cluster_distro", "coe", "driver", "labels", "image_id":
			return true
		}
	}
	return false
}

// checkLabels is the hook where the typed label schema checks the merged
// labels of a new template, cluster or node group (a node group's merged
// over its cluster's) made from ct.
func (s *Server) checkLabels(ct *model.ClusterTemplate, labels map[string]string) error {
	if s.opts.ValidateLabels == nil {
		return nil
	}
	if err := s.opts.ValidateLabels(ct, labels); err != nil {
		return badRequest("%v", err)
	}
	return nil
}
