package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/magnetite-io/magnetite/internal/apitypes"
)

// Bare-metal hosts (/v1/hosts, a Magnetite extension for administrators).

// HostAnswer is what a change to a host answered: the host as the backend
// left it, the operation still under way (a 202 with {"operation": ...},
// followed with GetHostOperation), or neither when a delete finished (204).
type HostAnswer struct {
	Host      *apitypes.Host
	Operation *apitypes.HostOperation
}

// ListHosts lists the hosts carrying every label given as KEY=VALUE.
func (c *Client) ListHosts(ctx context.Context, labels []string) ([]apitypes.Host, error) {
	var l apitypes.HostList
	var q url.Values
	if len(labels) > 0 {
		q = url.Values{"label": labels}
	}
	err := c.do(ctx, "GET", "/hosts", q, nil, &l)
	if l.Hosts == nil {
		l.Hosts = []apitypes.Host{}
	}
	return l.Hosts, err
}

// GetHost finds a host by UUID or name.
func (c *Client) GetHost(ctx context.Context, ident string) (*apitypes.Host, error) {
	var h apitypes.Host
	return &h, c.do(ctx, "GET", "/hosts/"+esc(ident), nil, nil, &h)
}

// EnrollHost adds a host to the inventory.
func (c *Client) EnrollHost(ctx context.Context, req apitypes.HostEnroll) (*HostAnswer, error) {
	return c.hostChange(ctx, "POST", "/hosts", nil, req)
}

// HostAction asks for an action (power, reboot, inspect, provide, detach,
// attach, cleaning_mode) with its body, nil for none.
func (c *Client) HostAction(ctx context.Context, ident, action string, body any) (*HostAnswer, error) {
	return c.hostChange(ctx, "POST", "/hosts/"+esc(ident)+"/actions/"+esc(action), nil, body)
}

// DeleteHost removes a host from the inventory; force deletes a host that
// is still deployed.
func (c *Client) DeleteHost(ctx context.Context, ident string, force bool) (*HostAnswer, error) {
	var q url.Values
	if force {
		q = url.Values{"force": {strconv.FormatBool(force)}}
	}
	return c.hostChange(ctx, "DELETE", "/hosts/"+esc(ident), q, nil)
}

// GetHostOperation reads a host operation, under way or ended.
func (c *Client) GetHostOperation(ctx context.Context, uuid string) (*apitypes.HostOperation, error) {
	var op apitypes.HostOperation
	return &op, c.do(ctx, "GET", "/hosts/operations/"+esc(uuid), nil, nil, &op)
}

// hostChange sends a change and tells the host from the operation by the
// body: only a 202 still under way carries "operation".
func (c *Client) hostChange(ctx context.Context, method, path string, q url.Values, in any) (*HostAnswer, error) {
	var raw json.RawMessage
	if err := c.do(ctx, method, path, q, in, &raw); err != nil {
		return nil, err
	}
	var a HostAnswer
	if len(raw) == 0 {
		return &a, nil
	}
	var accepted struct {
		Operation *apitypes.HostOperation `json:"operation"`
	}
	if err := json.Unmarshal(raw, &accepted); err != nil {
		return nil, fmt.Errorf("client: %s %s: decode answer: %w", method, path, err)
	}
	if accepted.Operation != nil {
		a.Operation = accepted.Operation
		return &a, nil
	}
	a.Host = &apitypes.Host{}
	if err := json.Unmarshal(raw, a.Host); err != nil {
		return nil, fmt.Errorf("client: %s %s: decode answer: %w", method, path, err)
	}
	return &a, nil
}
