package config

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Source says where an effective value came from.
type Source string

// Value is an effective option value and where it came from.
type Value struct {
	Option
	Value  string
	Source Source // "default", a file path, or "env MAGNETITE_X_Y"
}

// Config is the effective configuration.
type Config struct {
	values map[string]*Value
	// Files lists the files read, in order.
	Files []string
}

func key(section, name string) string { return strings.ToLower(section) + "." + strings.ToLower(name) }

// Load reads the main file (may be empty or missing when optional) and every
// *.conf file of confDir in name order, then the environment.
func Load(file, confDir string, environ []string) (*Config, error) {
	c := &Config{values: map[string]*Value{}}
	for _, o := range Options {
		c.values[key(o.Section, o.Name)] = &Value{Option: o, Value: o.Default, Source: "default"}
	}
	if file != "" {
		if err := c.readFile(file); err != nil {
			return nil, err
		}
	}
	if confDir != "" {
		entries, err := os.ReadDir(confDir)
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("config: read drop-in directory %s: %w", confDir, err)
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			if err := c.readFile(filepath.Join(confDir, n)); err != nil {
				return nil, err
			}
		}
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, "MAGNETITE_") {
			continue
		}
		rest := strings.ToLower(strings.TrimPrefix(k, "MAGNETITE_"))
		for _, val := range c.values {
			if rest == strings.ToLower(val.Section)+"_"+val.Name {
				val.Value, val.Source = v, Source("env "+k)
			}
		}
	}
	return c, c.validate()
}

func (c *Config) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c.Files = append(c.Files, path)
	section := "DEFAULT"
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, ";") {
			continue
		}
		if strings.HasPrefix(text, "[") {
			if !strings.HasSuffix(text, "]") {
				return fmt.Errorf("config: %s:%d: section header %q lacks a closing ]", path, line, text)
			}
			section = strings.TrimSpace(text[1 : len(text)-1])
			continue
		}
		name, val, ok := strings.Cut(text, "=")
		if !ok {
			return fmt.Errorf("config: %s:%d: expected \"option = value\", got %q", path, line, text)
		}
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		v, known := c.values[key(section, name)]
		if !known {
			return fmt.Errorf("config: %s:%d: unknown option %s in section [%s]; `magnetite config show` lists every option", path, line, name, section)
		}
		v.Value, v.Source = val, Source(path)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	return nil
}

func (c *Config) validate() error {
	for _, k := range []string{"api.max_limit", "api.max_body_bytes", "api.page_cache_bytes", "api.key_pool_size", "quotas.max_clusters_per_project", "cluster.create_timeout", "cluster.bm_create_timeout", "driver.boot_volume_size", "driver.ironic_compute_hosts", "keystone_authtoken.token_cache_size", "conductor.workers"} {
		if _, err := strconv.Atoi(c.values[k].Value); err != nil {
			v := c.values[k]
			return fmt.Errorf("config: [%s] %s = %q (from %s) is not a whole number", v.Section, v.Name, v.Value, v.Source)
		}
	}
	for _, k := range []string{"api.merge_labels_by_default", "management.delete_empty_namespaces", "conductor.inmemory_addons"} {
		if _, err := strconv.ParseBool(c.values[k].Value); err != nil {
			v := c.values[k]
			return fmt.Errorf("config: [%s] %s = %q (from %s) must be true or false", v.Section, v.Name, v.Value, v.Source)
		}
	}
	for _, k := range []string{"services.report_interval", "services.down_after", "keystone_authtoken.token_cache_time", "keystone_authtoken.http_timeout", "conductor.lease",
		"driver.vm_node_startup_timeout", "driver.bm_node_startup_timeout", "driver.vm_node_unhealthy_timeout", "driver.bm_node_unhealthy_timeout", "driver.inmemory_boot_time"} {
		if _, err := time.ParseDuration(c.values[k].Value); err != nil {
			v := c.values[k]
			return fmt.Errorf("config: [%s] %s = %q (from %s) is not a duration such as 10s", v.Section, v.Name, v.Value, v.Source)
		}
	}
	for _, sec := range []string{"conductor", "cluster_credentials"} {
		switch c.String(sec, "enabled") {
		case "auto", "true", "false":
		default:
			return fmt.Errorf("config: [%s] enabled must be auto, true or false, got %q", sec, c.String(sec, "enabled"))
		}
	}
	if c.String("cluster_credentials", "enabled") == "true" && c.String("auth", "strategy") != "keystone" {
		return fmt.Errorf("config: [cluster_credentials] enabled = true needs [auth] strategy = keystone: application credentials are made with the caller's Keystone token")
	}
	if k := c.String("database", "secret_key"); k != "" {
		if raw, err := base64.StdEncoding.DecodeString(k); err != nil || len(raw) != 32 {
			return fmt.Errorf("config: [database] secret_key must be 32 random bytes, base64-encoded (openssl rand -base64 32)")
		}
	}
	switch c.String("conductor", "infrastructure") {
	case "openstack", "inmemory":
	default:
		return fmt.Errorf("config: [conductor] infrastructure must be openstack or inmemory, got %q", c.String("conductor", "infrastructure"))
	}
	switch c.String("auth", "strategy") {
	case "noauth", "keystone":
	default:
		return fmt.Errorf("config: [auth] strategy must be noauth or keystone, got %q", c.String("auth", "strategy"))
	}
	return nil
}

// String returns an option's value.
func (c *Config) String(section, name string) string {
	v, ok := c.values[key(section, name)]
	if !ok {
		panic("config: undeclared option " + section + "." + name)
	}
	return v.Value
}

// Int returns an option's value as an integer (validated at load).
func (c *Config) Int(section, name string) int {
	n, _ := strconv.Atoi(c.String(section, name))
	return n
}

// Bool returns an option's value as a boolean (validated at load).
func (c *Config) Bool(section, name string) bool {
	b, _ := strconv.ParseBool(c.String(section, name))
	return b
}

// Duration returns an option's value as a duration (validated at load).
func (c *Config) Duration(section, name string) time.Duration {
	d, _ := time.ParseDuration(c.String(section, name))
	return d
}

// Effective lists every option's effective value in declaration order.
func (c *Config) Effective() []Value {
	out := make([]Value, 0, len(Options))
	for _, o := range Options {
		out = append(out, *c.values[key(o.Section, o.Name)])
	}
	return out
}

// StateDir resolves the state directory.
func (c *Config) StateDir() string {
	if d := c.String("DEFAULT", "state_dir"); d != "" {
		return d
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "magnetite")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "magnetite-state"
	}
	return filepath.Join(home, ".local", "state", "magnetite")
}

// Override sets an option from a command-line flag.
func (c *Config) Override(section, name, value, source string) {
	v, ok := c.values[key(section, name)]
	if !ok {
		panic("config: undeclared option " + section + "." + name)
	}
	v.Value, v.Source = value, Source(source)
}
