package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/fault"
)

// ErrRefused means Keystone understood a request and refused it (403, or a
// 400 about the request): retrying will not help. The error is a
// *RefusedError carrying Keystone's reason.
var ErrRefused = errors.New("auth: Keystone refused the request")

// RefusedError is Keystone's refusal of a request, with its reason.
type RefusedError struct {
	Status  int
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("Keystone refused the request (%d): %s", e.Status, e.Message)
}

// Is makes a RefusedError match ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ApplicationCredential is a Keystone application credential. Secret is
// only known to whoever created it: Keystone never shows it again.
type ApplicationCredential struct {
	ID        string
	Name      string
	UserID    string
	ProjectID string
	Secret    string
}

// CreateApplicationCredential creates an application credential for the
// user behind userToken, scoped to the token's project and holding the
// token's roles. It is restricted: it can manage no other credentials or
// trusts. Keystone refuses tokens that are themselves application
// credentials (ErrRefused, with Keystone's reason).
func (k *Keystone) CreateApplicationCredential(ctx context.Context, userToken, userID, name, description string) (*ApplicationCredential, error) {
	if userToken == "" || userID == "" {
		return nil, fault.New(ErrUnauthenticated, "creating an application credential needs the caller's Keystone token")
	}
	payload, err := json.Marshal(map[string]any{"application_credential": map[string]any{
		"name": name, "description": description, "unrestricted": false,
	}})
	if err != nil {
		return nil, err
	}
	var out struct {
		Credential struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			ProjectID string `json:"project_id"`
			Secret    string `json:"secret"`
		} `json:"application_credential"`
	}
	body, err := k.call(ctx, http.MethodPost, "/users/"+url.PathEscape(userID)+"/application_credentials", userToken, payload, http.StatusCreated)
	if err != nil {
		return nil, fmt.Errorf("create application credential %s: %w", name, err)
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Credential.ID == "" || out.Credential.Secret == "" {
		return nil, fault.New(ErrIdentityUnavailable, "Keystone's application credential has no id or secret")
	}
	c := out.Credential
	return &ApplicationCredential{ID: c.ID, Name: c.Name, UserID: userID, ProjectID: c.ProjectID, Secret: c.Secret}, nil
}

// DeleteApplicationCredential deletes a user's application credential. With
// an empty userToken it uses Magnetite's service token, which Keystone's
// default policy accepts when the service user holds the admin role. A
// credential that is already gone is not an error.
func (k *Keystone) DeleteApplicationCredential(ctx context.Context, userToken, userID, id string) error {
	_, err := k.call(ctx, http.MethodDelete, "/users/"+url.PathEscape(userID)+"/application_credentials/"+url.PathEscape(id), userToken, nil, http.StatusNoContent)
	var nf notFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete application credential %s of user %s: %w", id, userID, err)
	}
	return nil
}

// PublicAuthURL is the identity endpoint announced to clients, which
// workload clusters also use.
func (k *Keystone) PublicAuthURL() string { return k.cfg.WWWAuthenticateURI }

// RegionName is the region Magnetite's catalog lookups use.
func (k *Keystone) RegionName() string { return k.cfg.RegionName }

type notFoundError struct{ msg string }

func (e notFoundError) Error() string { return e.msg }

// call sends one identity API request with token, or with Magnetite's
// service token (renewed once if refused) when token is empty.
func (k *Keystone) call(ctx context.Context, method, path, token string, payload []byte, want int) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		var svc *serviceToken
		tok := token
		if tok == "" {
			var err error
			if svc, err = k.serviceToken(ctx); err != nil {
				return nil, err
			}
			tok = svc.token
		}
		var rd io.Reader
		if payload != nil {
			rd = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, k.base+path, rd)
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-Auth-Token", tok)
		req.Header.Set("Accept", "application/json")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := k.client.Do(req)
		if err != nil {
			k.log.Warn("keystone unreachable", "method", method, "error", scrubURLError(err))
			return nil, fault.New(ErrIdentityUnavailable, "Keystone could not be reached")
		}
		body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
		res.Body.Close()
		if err != nil {
			return nil, fault.New(ErrIdentityUnavailable, "reading Keystone's answer: %v", err)
		}
		if res.StatusCode == want {
			return body, nil
		}
		msg := keystoneMessage(body)
		switch {
		case res.StatusCode == http.StatusUnauthorized && svc != nil && attempt == 0:
			k.dropServiceToken(svc)
			continue
		case res.StatusCode == http.StatusUnauthorized:
			return nil, fault.New(ErrUnauthenticated, "Keystone did not accept the token: %s", msg)
		case res.StatusCode == http.StatusNotFound:
			return nil, notFoundError{msg: "Keystone: " + msg}
		case res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusConflict:
			return nil, &RefusedError{Status: res.StatusCode, Message: msg}
		default:
			return nil, fault.New(ErrIdentityUnavailable, "Keystone answered %d: %s", res.StatusCode, msg)
		}
	}
}

// keystoneMessage extracts the message of Keystone's error document.
func keystoneMessage(body []byte) string {
	var doc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Error.Message != "" {
		return doc.Error.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// ApplicationCredentialToken logs in with an application credential and
// returns a token scoped to its project, and when to log in again (three
// quarters into the token's life). A credential Keystone no longer knows
// is a *RefusedError.
func (k *Keystone) ApplicationCredentialToken(ctx context.Context, id, secret string) (string, time.Time, error) {
	ans, err := k.postLogin(ctx, "?nocatalog", map[string]any{"auth": map[string]any{"identity": map[string]any{
		"methods":                []string{"application_credential"},
		"application_credential": map[string]any{"id": id, "secret": secret},
	}}}, 4<<20, "logging in with a cluster's application credential")
	if err != nil {
		return "", time.Time{}, err
	}
	switch {
	case ans.status == http.StatusCreated:
	case ans.status == http.StatusUnauthorized || ans.status == http.StatusNotFound || ans.status == http.StatusForbidden:
		return "", time.Time{}, &RefusedError{Status: ans.status, Message: "application credential " + id + ": " + keystoneMessage(ans.body)}
	default:
		return "", time.Time{}, fault.New(ErrIdentityUnavailable, "Keystone answered %d: %s", ans.status, keystoneMessage(ans.body))
	}
	_, renewAt, err := ans.parse("an application credential login", "token")
	if err != nil {
		return "", time.Time{}, err
	}
	return ans.token, renewAt, nil
}
