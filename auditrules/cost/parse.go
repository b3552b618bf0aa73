// SPDX-License-Identifier: Apache-2.0

package cost

import (
	"errors"
	"slices"
	"strings"

	"github.com/elastic/go-libaudit/v2/rule"
	"github.com/elastic/go-libaudit/v2/rule/flags"

	"github.com/tracer-dev/tracer/auditrules/internal/abi"
)

// ParseRules reads rules in auditctl syntax, one a line, with go-libaudit's
// auditctl parser; comments, blank lines and control lines (-D, -b, -f, -e,
// -r, --backlog_wait_time, --loginuid-immutable) are skipped. It returns
// the rules, the lines it did not understand, and whether the rules lock
// audit (-e 2).
func ParseRules(text string) (rules []Rule, unparsed []string, locked bool) {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || line == "No rules" {
			continue
		}
		tok := strings.Fields(line)
		switch tok[0] {
		case "-D", "-b", "-f", "-r", "--backlog_wait_time", "--loginuid-immutable", "-i", "-c", "--reset-lost":
			continue
		case "-e":
			if len(tok) > 1 && tok[1] == "2" {
				locked = true
			}
			continue
		}
		r, err := parseRule(line)
		if err != nil {
			unparsed = append(unparsed, line)
			continue
		}
		r.Line, r.Text = i+1, line
		rules = append(rules, r)
	}
	return rules, unparsed, locked
}

var errNotRule = errors.New("not an audit rule")

// parseRule turns go-libaudit's reading of one rule into a Rule: the arch
// as b64 or b32, the key from -k or -F key=, the unset login uid as
// "unset" in whichever form it was written, and -p as a perm= field.
func parseRule(line string) (Rule, error) {
	parsed, err := flags.Parse(line)
	if err != nil {
		return Rule{}, err
	}
	var r Rule
	switch p := parsed.(type) {
	case *rule.FileWatchRule:
		r.List, r.Action, r.Watch = "watch", "always", p.Path
		r.Key = last(p.Keys)
		if perm := permLetters(p.Permissions); perm != "" {
			r.Fields = append(r.Fields, "perm="+perm)
		}
	case *rule.SyscallRule:
		r.List, r.Action = p.List, p.Action
		for _, s := range p.Syscalls {
			if s != "" && !slices.Contains(r.Syscalls, s) {
				r.Syscalls = append(r.Syscalls, s)
			}
		}
		r.Key = last(p.Keys)
		for _, f := range p.Filters {
			name, op, val := f.LHS, f.Comparator, f.RHS
			switch name {
			case "arch":
				r.Arch = abi.ABI(val)
			case "key":
				r.Key = val
			default:
				switch name {
				case "auid", "loginuid", "uid", "euid":
					if val == "-1" || val == "4294967295" {
						val = "unset"
					}
				case "path", "dir":
					r.Watch = val
				}
				r.Fields = append(r.Fields, name+op+val)
			}
		}
	default: // -D
		return Rule{}, errNotRule
	}
	return r, nil
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// permLetters writes -p's access types back as auditctl's letters.
func permLetters(perms []rule.AccessType) string {
	var b strings.Builder
	for _, p := range perms {
		switch p {
		case rule.ReadAccessType:
			b.WriteByte('r')
		case rule.WriteAccessType:
			b.WriteByte('w')
		case rule.ExecuteAccessType:
			b.WriteByte('x')
		case rule.AttributeChangeAccessType:
			b.WriteByte('a')
		}
	}
	return b.String()
}
