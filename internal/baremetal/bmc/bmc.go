package bmc

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalidAddress is wrapped by every error Parse returns.
var ErrInvalidAddress = errors.New("baremetal: invalid BMC address")

// Boot methods: how the deploy ramdisk reaches the host.
const (
	// BootNetwork is PXE/iPXE; it needs DHCP on a provisioning network.
	BootNetwork = "network"
	// BootVirtualMedia mounts an ISO through the BMC; routed networks suffice.
	BootVirtualMedia = "virtual-media"
	// BootUEFIHTTP points the UEFI HTTP boot client at a URL through Redfish;
	// no DHCP needed either.
	BootUEFIHTTP = "uefi-http"
)

// Interfaces are the Ironic hardware interfaces a node is enrolled with.
// Deploy and Inspect are what current Metal3 uses (direct deploy, in-band
// agent inspection); a backend may override them for older Ironic releases.
type Interfaces struct {
	Boot       string `json:"boot"`
	Deploy     string `json:"deploy"`
	Inspect    string `json:"inspect"`
	Management string `json:"management"`
	Power      string `json:"power"`
	RAID       string `json:"raid"`
	Vendor     string `json:"vendor,omitempty"`
	BIOS       string `json:"bios,omitempty"`
}

// Credentials are what a BMC needs besides its address. The password only
// ever travels to the backend.
type Credentials struct {
	Username string
	Password string
	// DisableCertificateVerification turns off TLS verification of the BMC
	// (sets <prefix>_verify_ca=false) for BMCs with self-signed certificates.
	DisableCertificateVerification bool
}

// Address is a parsed, valid BMC address and what Ironic needs to drive it.
type Address struct {
	// Scheme is the address type without a +http/+https suffix, e.g.
	// "redfish-virtualmedia"; a bare host is "ipmi".
	Scheme string `json:"scheme"`
	// Transport is http or https for BMCs spoken to over HTTP.
	Transport string `json:"transport,omitempty"`
	// Host is a DNS name or an IP literal (IPv6 without brackets).
	Host string `json:"host"`
	// Port is the port written in the address, or the protocol's default
	// where it has one (623 for IPMI, 443 for iLO and iRMC); 0 means the
	// transport's default.
	Port int `json:"port,omitempty"`
	// SystemID is the Redfish system path, e.g. /redfish/v1/Systems/1.
	SystemID string `json:"system_id,omitempty"`
	// PrivilegeLevel and CipherSuite tune IPMI sessions.
	PrivilegeLevel string `json:"privilege_level,omitempty"`
	CipherSuite    *int   `json:"cipher_suite,omitempty"`

	HardwareType string     `json:"hardware_type"`
	Interfaces   Interfaces `json:"interfaces"`
	BootMethod   string     `json:"boot_method"`
	// NeedsProvisioningNetwork is true for network (PXE) boot: the host must
	// sit on an L2 network where Ironic's DHCP answers.
	NeedsProvisioningNetwork bool `json:"needs_provisioning_network"`
	// NeedsBootMAC is true when Ironic cannot learn the boot NIC itself and
	// the host must be enrolled with its boot MAC address.
	NeedsBootMAC       bool `json:"needs_boot_mac"`
	SupportsSecureBoot bool `json:"supports_secure_boot"`

	family     family
	portGiven  bool
	driverKeys string // driver_info key prefix: ipmi, redfish, ilo, irmc
}

type family int

const (
	familyIPMI family = iota
	familyRedfish
	familyILO
	familyIRMC
)

// bmcType describes one accepted scheme.
type bmcType struct {
	family       family
	hardwareType string
	iface        Interfaces
	boot         string
	needsMAC     bool
	secureBoot   bool
	defaultPort  int
	transports   []string // accepted +suffixes; the first is the default
	form         string   // the address form shown in messages
}

const (
	deployDirect   = "direct"
	inspectAgent   = "agent"
	redfishForm    = "%s[+http|+https]://HOST[:PORT]/redfish/v1/Systems/ID"
	hostPortForm   = "%s://HOST[:PORT]"
	defaultIPMI    = 623
	defaultHTTPS   = 443
	maxAddressSize = 2048
)

func redfishType(boot, bootMethod string, needsMAC bool) bmcType {
	return bmcType{family: familyRedfish, hardwareType: "redfish", boot: bootMethod, needsMAC: needsMAC, secureBoot: true,
		transports: []string{"https", "http"}, form: redfishForm,
		iface: Interfaces{Boot: boot, Deploy: deployDirect, Inspect: inspectAgent, Management: "redfish", Power: "redfish", RAID: "redfish"}}
}

func idracType(boot, bootMethod string, needsMAC bool) bmcType {
	t := redfishType(boot, bootMethod, needsMAC)
	t.hardwareType = "idrac"
	// The idrac hardware type defaults to its WS-Man interfaces; every one
	// of them must be switched to the Redfish implementation.
	t.iface.Management, t.iface.Power, t.iface.RAID = "idrac-redfish", "idrac-redfish", "idrac-redfish"
	t.iface.Vendor, t.iface.BIOS = "idrac-redfish", "idrac-redfish"
	return t
}

func iloType(hardwareType, boot, bootMethod, raid string) bmcType {
	return bmcType{family: familyILO, hardwareType: hardwareType, boot: bootMethod, needsMAC: true, secureBoot: true,
		defaultPort: defaultHTTPS, transports: []string{"https"}, form: hostPortForm,
		iface: Interfaces{Boot: boot, Deploy: deployDirect, Inspect: inspectAgent, Management: "ilo", Power: "ilo", RAID: raid}}
}

func ipmiType(needsMAC bool) bmcType {
	return bmcType{family: familyIPMI, hardwareType: "ipmi", boot: BootNetwork, needsMAC: needsMAC,
		defaultPort: defaultIPMI, form: hostPortForm + "[?privilegelevel=OPERATOR][&ciphersuite=3]",
		iface: Interfaces{Boot: "ipxe", Deploy: deployDirect, Inspect: inspectAgent, Management: "ipmitool", Power: "ipmitool", RAID: "no-raid"}}
}

// bmcTypes are the schemes of the Metal3 user guide and current
// baremetal-operator, plus the vendor drivers Metal3 has since dropped but
// Ironic still ships (ilo4, ilo5, irmc).
var bmcTypes = map[string]bmcType{
	"ipmi": ipmiType(false),
	// libvirt hosts are development VMs behind VirtualBMC: IPMI, but the
	// boot NIC cannot be discovered.
	"libvirt":              ipmiType(true),
	"redfish":              redfishType("ipxe", BootNetwork, false),
	"redfish-virtualmedia": redfishType("redfish-virtual-media", BootVirtualMedia, true),
	"redfish-uefihttp":     redfishType("redfish-https", BootUEFIHTTP, false),
	"ilo5-redfish":         redfishType("ipxe", BootNetwork, false),
	"ilo5-virtualmedia":    redfishType("redfish-virtual-media", BootVirtualMedia, true),
	"idrac-redfish":        idracType("ipxe", BootNetwork, false),
	"idrac-virtualmedia":   idracType("idrac-redfish-virtual-media", BootVirtualMedia, true),
	"ilo4":                 iloType("ilo", "ilo-ipxe", BootNetwork, "no-raid"),
	"ilo4-virtualmedia":    iloType("ilo", "ilo-virtual-media", BootVirtualMedia, "no-raid"),
	"ilo5":                 iloType("ilo5", "ilo-ipxe", BootNetwork, "ilo5"),
	"irmc": {family: familyIRMC, hardwareType: "irmc", boot: BootNetwork, needsMAC: true, secureBoot: true,
		defaultPort: defaultHTTPS, form: hostPortForm,
		// iRMC power goes through IPMI, hence the ipmi_* keys in driver_info.
		iface: Interfaces{Boot: "ipxe", Deploy: deployDirect, Inspect: inspectAgent, Management: "irmc", Power: "ipmitool", RAID: "irmc"}},
}

// retiredSchemes were accepted once; say what replaced them.
var retiredSchemes = map[string]string{
	"idrac":    "the WS-Man based idrac driver was removed from Ironic; use idrac-redfish:// or idrac-virtualmedia://",
	"ibmc":     "the ibmc driver was removed from Ironic; use redfish://",
	"http":     "a plain URL does not say which protocol the BMC speaks; use redfish+http:// (or another scheme)",
	"https":    "a plain URL does not say which protocol the BMC speaks; use redfish:// (or another scheme)",
	"idrac9":   "use idrac-redfish:// or idrac-virtualmedia://",
	"ilo6":     "iLO 6 speaks Redfish; use ilo5-redfish:// or ilo5-virtualmedia://",
	"ipmitool": "use ipmi://",
}

// Schemes lists the accepted scheme names, sorted.
func Schemes() []string {
	out := make([]string, 0, len(bmcTypes))
	for s := range bmcTypes {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

var dnsName = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?$`)

var zoneName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

var ipmiPrivilegeLevels = []string{"ADMINISTRATOR", "OPERATOR", "USER", "CALLBACK"}

// AddressError says what is wrong with a BMC address. Its message never
// repeats credentials written into the address.
type AddressError struct {
	Address string // with any user:password@ removed
	Reason  string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("BMC address %q: %s", e.Address, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidAddress) hold.
func (e *AddressError) Unwrap() error { return ErrInvalidAddress }

func addressError(addr, format string, args ...any) error {
	return &AddressError{Address: redactUserinfo(addr), Reason: fmt.Sprintf(format, args...)}
}

// redactUserinfo removes a user:password@ part so it cannot reach a message.
func redactUserinfo(addr string) string {
	rest, prefix := addr, ""
	if i := strings.Index(addr, "://"); i >= 0 {
		prefix, rest = addr[:i+3], addr[i+3:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return prefix + "…@" + rest[at+1:]
	}
	return addr
}

func acceptedSchemes() string {
	return "accepted schemes are " + strings.Join(Schemes(), ", ") +
		" (redfish, idrac and ilo5 ones also with +http or +https), or a bare HOST[:PORT] for IPMI"
}

// Parse validates a BMC address in the forms Metal3 accepts and
// maps it to Ironic's hardware type, interfaces and driver_info keys.
func Parse(address string) (*Address, error) {
	addr := strings.TrimSpace(address)
	if addr == "" {
		return nil, addressError(addr, "the address is empty; give e.g. ipmi://10.0.0.5 or redfish://10.0.0.5/redfish/v1/Systems/1")
	}
	if len(addr) > maxAddressSize {
		return nil, addressError(addr[:64]+"…", "the address is longer than %d characters", maxAddressSize)
	}
	for _, r := range addr {
		if r <= ' ' || r == 0x7f {
			return nil, addressError(addr, "the address contains spaces or control characters")
		}
	}
	if !strings.Contains(addr, "://") {
		return parseBareHost(addr)
	}
	schemePart, rest, _ := strings.Cut(addr, "://")
	scheme := strings.ToLower(schemePart)
	name, transport, hasTransport := strings.Cut(scheme, "+")
	t, ok := bmcTypes[name]
	if !ok {
		if hint, retired := retiredSchemes[name]; retired {
			return nil, addressError(addr, "scheme %q is not supported: %s", name, hint)
		}
		return nil, addressError(addr, "unknown scheme %q; %s", schemePart, acceptedSchemes())
	}
	if hasTransport {
		if len(t.transports) == 0 {
			return nil, addressError(addr, "%s takes no +%s suffix; write %s", name, transport, fmt.Sprintf(t.form, name))
		}
		if !contains(t.transports, transport) {
			return nil, addressError(addr, "%s accepts the suffix %s, not +%s", name, "+"+strings.Join(t.transports, " or +"), transport)
		}
	} else if len(t.transports) > 0 {
		transport = t.transports[0]
	}
	if rest == "" {
		return nil, addressError(addr, "no host after %s://; write %s", schemePart, fmt.Sprintf(t.form, name))
	}
	hostPart := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		hostPart = rest[:i]
	}
	if strings.Contains(hostPart, "@") {
		return nil, addressError(addr, "credentials do not belong in the address; send the username and password separately")
	}
	if !strings.HasPrefix(hostPart, "[") && strings.Count(hostPart, ":") > 1 {
		return nil, addressError(addr, "an IPv6 address must be written in brackets, e.g. %s://[%s]", schemePart, hostPart)
	}
	u, err := url.Parse(scheme + "://" + rest)
	if err != nil {
		return nil, addressError(addr, "not a valid URL (%s); write %s", urlProblem(err), fmt.Sprintf(t.form, name))
	}
	if u.Fragment != "" || strings.Contains(rest, "#") {
		return nil, addressError(addr, "a #fragment has no meaning in a BMC address")
	}
	if strings.HasSuffix(u.Host, ":") {
		return nil, addressError(addr, "the port after the colon is missing")
	}
	a := &Address{Scheme: name, Transport: transport}
	if err := a.setHostPort(addr, u.Hostname(), u.Port(), strings.HasPrefix(u.Host, "["), t.defaultPort); err != nil {
		return nil, err
	}
	if err := a.setPathAndQuery(addr, name, t, u); err != nil {
		return nil, err
	}
	a.apply(t)
	return a, nil
}

// parseBareHost reads HOST, HOST:PORT, [IPv6]:PORT or a bare IPv6 literal
// as an IPMI address, as Metal3 does.
func parseBareHost(addr string) (*Address, error) {
	if i := strings.IndexAny(addr, "/?#@"); i >= 0 {
		if addr[i] == '@' {
			return nil, addressError(addr, "credentials do not belong in the address; send the username and password separately")
		}
		return nil, addressError(addr, "an address without a scheme is an IPMI HOST[:PORT] and cannot have a path or query; "+
			"for Redfish write redfish://HOST[:PORT]/redfish/v1/Systems/ID")
	}
	if scheme, after, ok := strings.Cut(addr, ":"); ok && strings.Trim(after, "0123456789") != "" {
		if _, known := bmcTypes[strings.ToLower(scheme)]; known {
			return nil, addressError(addr, "write %s://… with two slashes after the scheme", strings.ToLower(scheme))
		}
	}
	host, port, bracketed := addr, "", false
	switch {
	case strings.HasPrefix(addr, "["):
		end := strings.Index(addr, "]")
		if end < 0 {
			return nil, addressError(addr, "the IPv6 address lacks its closing bracket")
		}
		host, bracketed = addr[1:end], true
		switch tail := addr[end+1:]; {
		case tail == "":
		case strings.HasPrefix(tail, ":"):
			port = tail[1:]
			if port == "" {
				return nil, addressError(addr, "the port after the colon is missing")
			}
		default:
			return nil, addressError(addr, "unexpected %q after the IPv6 address; write [ADDRESS]:PORT", tail)
		}
	case strings.Count(addr, ":") > 1:
		// An unbracketed IPv6 literal cannot carry a port.
		if _, err := netip.ParseAddr(addr); err != nil {
			return nil, addressError(addr, "neither HOST:PORT nor an IPv6 address; write IPv6 addresses as [ADDRESS]:PORT")
		}
	default:
		if h, p, ok := strings.Cut(addr, ":"); ok {
			host, port = h, p
			if port == "" {
				return nil, addressError(addr, "the port after the colon is missing")
			}
		}
	}
	t := bmcTypes["ipmi"]
	a := &Address{Scheme: "ipmi"}
	if err := a.setHostPort(addr, host, port, bracketed, t.defaultPort); err != nil {
		return nil, err
	}
	a.PrivilegeLevel = ipmiPrivilegeLevels[0]
	a.apply(t)
	return a, nil
}

func (a *Address) setHostPort(addr, host, port string, bracketed bool, defaultPort int) error {
	if host == "" {
		return addressError(addr, "the host is missing")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Is4() && bracketed {
			return addressError(addr, "brackets are for IPv6 addresses; write an IPv4 address without them")
		}
		if z := ip.Zone(); z != "" && !zoneName.MatchString(z) {
			return addressError(addr, "IPv6 zone %q is not an interface name or number", z)
		}
		if ip.Is6() && !bracketed && port != "" {
			return addressError(addr, "write IPv6 addresses in brackets when a port follows, e.g. [%s]:%s", host, port)
		}
		a.Host = ip.String()
	} else {
		if bracketed {
			return addressError(addr, "%q in brackets is not an IPv6 address", host)
		}
		if len(host) > 253 || !dnsName.MatchString(host) || isAllDigitsAndDots(host) {
			return addressError(addr, "host %q is neither an IP address nor a valid DNS name", host)
		}
		a.Host = strings.ToLower(host)
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '+' || port[0] == '-' {
			return addressError(addr, "port %q is not a number from 1 to 65535", port)
		}
		a.Port, a.portGiven = n, true
	} else {
		a.Port = defaultPort
	}
	return nil
}

// isAllDigitsAndDots catches malformed IPv4 such as 10.0.0.300 that would
// otherwise pass as a DNS name.
func isAllDigitsAndDots(s string) bool {
	return strings.Trim(s, "0123456789.") == ""
}

func (a *Address) setPathAndQuery(addr, name string, t bmcType, u *url.URL) error {
	path := u.Path
	if t.family == familyRedfish {
		if strings.ContainsFunc(path, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return addressError(addr, "the system path contains control characters")
		}
		if trimmed := strings.Trim(path, "/"); trimmed != "" && trimmed != "redfish/v1" {
			a.SystemID = "/" + strings.TrimLeft(path, "/")
		}
	} else if path != "" && path != "/" {
		return addressError(addr, "%s addresses take no path (%q); write %s", name, path, fmt.Sprintf(t.form, name))
	}
	if u.RawQuery == "" {
		if t.family == familyIPMI {
			a.PrivilegeLevel = ipmiPrivilegeLevels[0]
		}
		return nil
	}
	if t.family != familyIPMI {
		return addressError(addr, "%s addresses take no ?query; write %s", name, fmt.Sprintf(t.form, name))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return addressError(addr, "the query is malformed")
	}
	a.PrivilegeLevel = ipmiPrivilegeLevels[0]
	for key, vals := range q {
		if len(vals) != 1 {
			return addressError(addr, "query parameter %q is given %d times", key, len(vals))
		}
		v := vals[0]
		switch strings.ToLower(key) {
		case "privilegelevel":
			lvl := strings.ToUpper(v)
			if !contains(ipmiPrivilegeLevels, lvl) {
				return addressError(addr, "privilegelevel %q is not one of %s", v, strings.Join(ipmiPrivilegeLevels, ", "))
			}
			a.PrivilegeLevel = lvl
		case "ciphersuite":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 17 {
				return addressError(addr, "ciphersuite %q is not an IPMI cipher suite number from 0 to 17", v)
			}
			a.CipherSuite = &n
		default:
			return addressError(addr, "unknown query parameter %q; IPMI addresses accept privilegelevel and ciphersuite", key)
		}
	}
	return nil
}

func (a *Address) apply(t bmcType) {
	a.family = t.family
	a.HardwareType = t.hardwareType
	a.Interfaces = t.iface
	a.BootMethod = t.boot
	a.NeedsProvisioningNetwork = t.boot == BootNetwork
	a.NeedsBootMAC = t.needsMAC
	a.SupportsSecureBoot = t.secureBoot
	switch t.family {
	case familyIPMI:
		a.driverKeys = "ipmi"
	case familyRedfish:
		a.driverKeys = "redfish"
	case familyILO:
		a.driverKeys = "ilo"
	case familyIRMC:
		a.driverKeys = "irmc"
	}
}

// hostPort joins host and an explicit port, bracketing IPv6.
func (a *Address) hostPort() string {
	h := a.Host
	if strings.Contains(h, ":") {
		h = "[" + strings.ReplaceAll(h, "%", "%25") + "]"
	}
	if a.portGiven {
		return h + ":" + strconv.Itoa(a.Port)
	}
	return h
}

// DriverInfo is the node's driver_info for this address and credentials.
func (a *Address) DriverInfo(c Credentials) map[string]any {
	p := a.driverKeys
	info := map[string]any{p + "_username": c.Username, p + "_password": c.Password}
	switch a.family {
	case familyIPMI:
		info["ipmi_address"] = a.Host
		info["ipmi_port"] = a.Port
		info["ipmi_priv_level"] = a.PrivilegeLevel
		if a.CipherSuite != nil {
			info["ipmi_cipher_suite"] = *a.CipherSuite
		}
	case familyRedfish:
		info["redfish_address"] = a.Transport + "://" + a.hostPort()
		if a.SystemID != "" {
			info["redfish_system_id"] = a.SystemID
		}
	case familyILO:
		info["ilo_address"] = a.Host
		if a.portGiven {
			info["client_port"] = a.Port
		}
	case familyIRMC:
		info["irmc_address"] = a.Host
		if a.portGiven {
			info["irmc_port"] = a.Port
		}
		info["ipmi_address"] = a.Host
		info["ipmi_username"], info["ipmi_password"] = c.Username, c.Password
	}
	if c.DisableCertificateVerification && a.family != familyIPMI {
		info[p+"_verify_ca"] = false
	}
	return info
}

// PasswordMask replaces passwords wherever driver_info is shown.
const PasswordMask = "******"

// RedactDriverInfo returns a copy of driver_info with every *_password
// value masked.
func RedactDriverInfo(info map[string]any) map[string]any {
	out := make(map[string]any, len(info))
	for k, v := range info {
		if strings.HasSuffix(k, "_password") {
			v = PasswordMask
		}
		out[k] = v
	}
	return out
}

// String is the canonical form of the address.
func (a *Address) String() string {
	s := a.Scheme
	if a.Transport != "" && a.Transport != bmcTypes[a.Scheme].transports[0] {
		s += "+" + a.Transport
	}
	s += "://" + a.hostPort() + (&url.URL{Path: a.SystemID}).EscapedPath()
	if a.family == familyIPMI {
		q := url.Values{}
		if a.PrivilegeLevel != "" && a.PrivilegeLevel != ipmiPrivilegeLevels[0] {
			q.Set("privilegelevel", a.PrivilegeLevel)
		}
		if a.CipherSuite != nil {
			q.Set("ciphersuite", strconv.Itoa(*a.CipherSuite))
		}
		if len(q) > 0 {
			s += "?" + q.Encode()
		}
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// urlProblem names what net/url disliked without echoing the input, which
// could hold a password.
func urlProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "invalid port"):
		return "the port is not a number"
	case strings.Contains(msg, "invalid character"):
		return "it has a character not allowed in a host name"
	case strings.Contains(msg, "IP-literal"), strings.Contains(msg, "invalid host: ParseAddr"):
		return "the part in brackets is not an IPv6 address"
	case strings.Contains(msg, "missing ']'"):
		return "the IPv6 address lacks its closing bracket"
	case strings.Contains(msg, "invalid URL escape"):
		return "it has a malformed %-escape"
	}
	return "it cannot be parsed"
}
