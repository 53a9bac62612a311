package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/baremetal/bmc"
)

// bmcValidation is what `host validate-bmc` prints.
type bmcValidation struct {
	Canonical string `json:"address"`
	*bmc.Address
	// DriverInfo is the node's driver_info with the password masked.
	DriverInfo map[string]any `json:"driver_info"`
}

func validateBMCCommand() *cobra.Command {
	var username string
	var insecure bool
	cmd := &cobra.Command{
		Use:   "validate-bmc ADDRESS",
		Short: "Check a BMC address and show the Ironic hardware type, interfaces and driver_info it maps to",
		Long: "Check a BMC address in the forms Metal3 accepts (ipmi://, redfish[+http|+https]://, " +
			"redfish-virtualmedia://, idrac-virtualmedia://, ilo5-redfish://, irmc:// ...; a bare HOST[:PORT] is IPMI) " +
			"and print what Magnetite would enroll in Ironic as JSON. Exits non-zero with the reason when the address is not valid.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := bmc.Parse(args[0])
			if err != nil {
				return err
			}
			if username == "" {
				username = "<username>"
			}
			info := a.DriverInfo(bmc.Credentials{Username: username, Password: bmc.PasswordMask, DisableCertificateVerification: insecure})
			out, err := json.MarshalIndent(bmcValidation{Canonical: a.String(), Address: a, DriverInfo: bmc.RedactDriverInfo(info)}, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return nil
		},
	}
	cmd.Flags().StringVar(&username, "username", "", "BMC user name to show in driver_info")
	cmd.Flags().BoolVar(&insecure, "disable-certificate-verification", false, "show driver_info for a BMC whose TLS certificate is not verified")
	return cmd
}
