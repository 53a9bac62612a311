package main

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/client"
)

func clusterConfigCommand(o *clientOptions) *cobra.Command {
	var dir string
	var force, outputCerts bool
	cmd := &cobra.Command{
		Use:   "config CLUSTER [--dir DIR]",
		Short: "Write a kubeconfig for the cluster (a client certificate signed by the cluster CA)",
		Long: "Fetches the cluster CA, has it sign a new client key's certificate (CN admin, O system:masters)\n" +
			"and writes DIR/config (mode 0600), as `openstack coe cluster config` does. Prints the export line for KUBECONFIG.",
		Args: cobra.ExactArgs(1),
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cl, err := c.GetCluster(ctx, args[0])
			if err != nil {
				return err
			}
			if cl.APIAddress == nil || *cl.APIAddress == "" {
				return fmt.Errorf("cluster %s has no API address yet (status %s); try again once it is CREATE_COMPLETE", cl.Name, cl.Status)
			}
			ca, err := c.ClusterCA(ctx, cl.UUID)
			if err != nil {
				return fmt.Errorf("fetch the cluster CA: %w", err)
			}
			key, csr, err := certs.AdminKeyAndCSR()
			if err != nil {
				return err
			}
			keyPEM := string(key)
			cert, err := c.SignCertificate(ctx, cl.UUID, string(csr))
			if err != nil {
				return fmt.Errorf("have the cluster CA sign the client certificate: %w", err)
			}
			files := map[string]string{}
			files["config"], err = kubeconfig(cl.Name, *cl.APIAddress, ca.PEM, cert.PEM, keyPEM)
			if err != nil {
				return err
			}
			if outputCerts {
				files["ca.pem"], files["cert.pem"], files["key.pem"] = ca.PEM, cert.PEM, keyPEM
			}
			if err := writePrivateFiles(abs, files, force); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", filepath.Join(abs, "config"))
			return nil
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to write config (and with --output-certs ca.pem, cert.pem, key.pem) into")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing files")
	cmd.Flags().BoolVar(&outputCerts, "output-certs", false, "also write the CA, certificate and key as separate PEM files")
	return cmd
}

// kubeconfig renders a kubeconfig with the certificates embedded.
func kubeconfig(name, server, caPEM, certPEM, keyPEM string) (string, error) {
	for what, p := range map[string]string{"CA certificate": caPEM, "client certificate": certPEM, "client key": keyPEM} {
		if b, _ := pem.Decode([]byte(p)); b == nil {
			return "", fmt.Errorf("the %s the API returned is not PEM", what)
		}
	}
	type named struct {
		Name    string         `json:"name"`
		Cluster map[string]any `json:"cluster,omitempty"`
		Context map[string]any `json:"context,omitempty"`
		User    map[string]any `json:"user,omitempty"`
	}
	doc := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []named{{Name: name, Cluster: map[string]any{
			"server": server, "certificate-authority-data": []byte(caPEM),
		}}},
		"users": []named{{Name: "admin", User: map[string]any{
			"client-certificate-data": []byte(certPEM), "client-key-data": []byte(keyPEM),
		}}},
		"contexts":        []named{{Name: "default", Context: map[string]any{"cluster": name, "user": "admin"}}},
		"current-context": "default",
		"preferences":     map[string]any{},
	}
	b, err := yaml.Marshal(doc)
	return string(b), err
}

// writePrivateFiles writes files readable by the owner only, refusing to
// replace existing ones unless forced.
func writePrivateFiles(dir string, files map[string]string, force bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err == nil && !force {
			return fmt.Errorf("%s exists; pass --force to overwrite it", p)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		_ = os.Remove(p)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}
