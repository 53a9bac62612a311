package auth

import (
	"fmt"
	"slices"
	"strings"
)

// The oslo.policy check language, the subset OpenStack policy files use:
//
//	@  !                     always / never
//	rule:NAME                another rule
//	role:NAME                the caller holds the role (case-insensitive)
//	is_admin:True            the caller passes context_is_admin
//	project_id:%(project_id)s, user_id:...
//	                         a caller attribute equals a target attribute or a literal
//	'True':%(public)s        a literal equals a target attribute
//	not X, X and Y, X or Y, ( ... )
//
// An empty check string always passes, as in oslo.policy.

type checkExpr interface {
	eval(e *evalEnv) bool
	walk(fn func(checkExpr))
}

type evalEnv struct {
	rules  map[string]checkExpr
	id     Identity
	target Target
}

func (e *evalEnv) rule(name string) bool {
	expr, ok := e.rules[name]
	return ok && expr.eval(e)
}

// targetValue resolves %(attr)s against the target; ok is false for
// attributes the target does not have.
func (e *evalEnv) targetValue(attr string) (string, bool) {
	if attr == "public" {
		if e.target.Public {
			return "True", true
		}
		return "False", true
	}
	return ownerValue(attr, e.target.ProjectID, e.target.UserID)
}

// credential resolves a caller attribute.
func (e *evalEnv) credential(key string) (string, bool) {
	return ownerValue(key, e.id.ProjectID, e.id.UserID)
}

// ownerValue resolves project_id and user_id, the attributes callers and
// targets share.
func ownerValue(key, projectID, userID string) (string, bool) {
	switch key {
	case "project_id":
		return projectID, true
	case "user_id":
		return userID, true
	}
	return "", false
}

type constCheck bool

func (c constCheck) eval(*evalEnv) bool      { return bool(c) }
func (c constCheck) walk(fn func(checkExpr)) { fn(c) }

type ruleRef string

func (r ruleRef) eval(e *evalEnv) bool    { return e.rule(string(r)) }
func (r ruleRef) walk(fn func(checkExpr)) { fn(r) }

type roleCheck string

func (r roleCheck) eval(e *evalEnv) bool    { return e.id.HasRole(string(r)) }
func (r roleCheck) walk(fn func(checkExpr)) { fn(r) }

type isAdminCheck bool

func (c isAdminCheck) eval(e *evalEnv) bool    { return e.rule(AdminRule) == bool(c) }
func (c isAdminCheck) walk(fn func(checkExpr)) { fn(c) }

// operand is one side of a generic check: a literal, a target attribute
// (%(attr)s) or, on the left only, a caller attribute.
type operand struct {
	literal    string
	isLiteral  bool
	targetAttr string
}

type genericCheck struct {
	left  string // caller attribute name, unless leftLit
	lit   string
	isLit bool
	right operand
}

func (g genericCheck) eval(e *evalEnv) bool {
	var have string
	if g.isLit {
		have = g.lit
	} else {
		v, ok := e.credential(g.left)
		if !ok {
			return false
		}
		have = v
	}
	want := g.right.literal
	if !g.right.isLiteral {
		v, ok := e.targetValue(g.right.targetAttr)
		if !ok {
			return false
		}
		want = v
	}
	return have == want
}
func (g genericCheck) walk(fn func(checkExpr)) { fn(g) }

type andExpr []checkExpr

// eval is true unless one operand is false; it stops at the first false.
func (a andExpr) eval(e *evalEnv) bool {
	return !slices.ContainsFunc(a, func(c checkExpr) bool { return !c.eval(e) })
}
func (a andExpr) walk(fn func(checkExpr)) { walkOperands(a, a, fn) }

type orExpr []checkExpr

// eval is true when one operand is; it stops at the first true.
func (o orExpr) eval(e *evalEnv) bool {
	return slices.ContainsFunc(o, func(c checkExpr) bool { return c.eval(e) })
}
func (o orExpr) walk(fn func(checkExpr)) { walkOperands(o, o, fn) }

// walkOperands visits a compound check, then each of its operands.
func walkOperands(self checkExpr, operands []checkExpr, fn func(checkExpr)) {
	fn(self)
	for _, c := range operands {
		c.walk(fn)
	}
}

type notExpr struct{ inner checkExpr }

func (n notExpr) eval(e *evalEnv) bool { return !n.inner.eval(e) }
func (n notExpr) walk(fn func(checkExpr)) {
	fn(n)
	n.inner.walk(fn)
}

// tokenize splits a check string the way oslo.policy does: on white space,
// with leading "(" and trailing ")" peeled off as tokens of their own (so
// "%(project_id)s" stays whole).
func tokenize(s string) []string {
	var out []string
	for _, word := range strings.Fields(s) {
		for strings.HasPrefix(word, "(") {
			out = append(out, "(")
			word = word[1:]
		}
		closing := 0
		for strings.HasSuffix(word, ")") && !strings.HasSuffix(word, ")s") {
			closing++
			word = word[:len(word)-1]
		}
		if word != "" {
			out = append(out, word)
		}
		for range closing {
			out = append(out, ")")
		}
	}
	return out
}

type checkParser struct {
	toks []string
	pos  int
}

func parseCheck(s string) (checkExpr, error) {
	toks := tokenize(s)
	if len(toks) == 0 {
		return constCheck(true), nil
	}
	p := &checkParser{toks: toks}
	expr, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q in %q", p.toks[p.pos], s)
	}
	return expr, nil
}

func (p *checkParser) peekKeyword(kw string) bool {
	return p.pos < len(p.toks) && strings.EqualFold(p.toks[p.pos], kw)
}

func (p *checkParser) or() (checkExpr, error) {
	return p.chain("or", p.and, func(terms []checkExpr) checkExpr { return orExpr(terms) })
}

func (p *checkParser) and() (checkExpr, error) {
	return p.chain("and", p.not, func(terms []checkExpr) checkExpr { return andExpr(terms) })
}

// chain parses operand {keyword operand}, joining two or more operands.
func (p *checkParser) chain(keyword string, operand func() (checkExpr, error), join func([]checkExpr) checkExpr) (checkExpr, error) {
	first, err := operand()
	if err != nil {
		return nil, err
	}
	terms := []checkExpr{first}
	for p.peekKeyword(keyword) {
		p.pos++
		next, err := operand()
		if err != nil {
			return nil, err
		}
		terms = append(terms, next)
	}
	if len(terms) == 1 {
		return first, nil
	}
	return join(terms), nil
}

func (p *checkParser) not() (checkExpr, error) {
	if p.pos >= len(p.toks) {
		return nil, fmt.Errorf("the check string ends where a check was expected")
	}
	switch tok := p.toks[p.pos]; {
	case strings.EqualFold(tok, "not"):
		p.pos++
		inner, err := p.not()
		if err != nil {
			return nil, err
		}
		return notExpr{inner}, nil
	case tok == "(":
		p.pos++
		inner, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.pos >= len(p.toks) || p.toks[p.pos] != ")" {
			return nil, fmt.Errorf("a \"(\" is not closed")
		}
		p.pos++
		return inner, nil
	case tok == ")" || strings.EqualFold(tok, "and") || strings.EqualFold(tok, "or"):
		return nil, fmt.Errorf("unexpected %q where a check was expected", tok)
	default:
		p.pos++
		return parseAtom(tok)
	}
}

func unquote(s string) (string, bool) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], true
	}
	return s, false
}

func parseAtom(tok string) (checkExpr, error) {
	switch tok {
	case "@":
		return constCheck(true), nil
	case "!":
		return constCheck(false), nil
	}
	kind, match, ok := strings.Cut(tok, ":")
	if !ok || kind == "" {
		return nil, fmt.Errorf("%q is not a check; expected KIND:VALUE such as role:admin or rule:admin_api", tok)
	}
	switch kind {
	case "rule":
		return ruleRef(match), nil
	case "role":
		return roleCheck(match), nil
	case "is_admin":
		switch strings.ToLower(match) {
		case "true":
			return isAdminCheck(true), nil
		case "false":
			return isAdminCheck(false), nil
		}
		return nil, fmt.Errorf("is_admin takes True or False, got %q", match)
	case "http", "https":
		return nil, fmt.Errorf("%s checks (asking a remote server) are not supported", kind)
	}
	g := genericCheck{left: kind}
	if lit, quoted := unquote(kind); quoted {
		g.lit, g.isLit = lit, true
	}
	if strings.HasPrefix(match, "%(") && strings.HasSuffix(match, ")s") {
		g.right.targetAttr = match[2 : len(match)-2]
	} else {
		lit, _ := unquote(match)
		g.right = operand{literal: lit, isLiteral: true}
	}
	return g, nil
}
