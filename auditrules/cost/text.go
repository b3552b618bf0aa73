// SPDX-License-Identifier: Apache-2.0

package cost

import (
	"fmt"
	"sort"
	"strings"

	"github.com/elastic/go-libaudit/v2/auparse"
)

// ruleFinding is a finding about one rule.
func ruleFinding(kind, sev string, r *Rule, msg, fix string) Finding {
	return Finding{Kind: kind, Severity: sev, Lines: []int{r.Line}, Rules: []string{r.Text}, Message: msg, Fix: fix}
}

// groupFinding is a finding about several rules; the caller words it.
func groupFinding(kind, sev string, rs []*Rule) Finding {
	f := Finding{Kind: kind, Severity: sev}
	for _, r := range rs {
		f.Lines, f.Rules = append(f.Lines, r.Line), append(f.Rules, r.Text)
	}
	return f
}

// splitField splits "auid>=1000" into name, operator and value.
func splitField(s string) (name, op, val string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '=', '!', '<', '>', '&':
			j := i + 1
			for j < len(s) && strings.ContainsRune("=<>&", rune(s[j])) {
				j++
			}
			return s[:i], s[i:j], s[j:]
		}
	}
	return "", "", ""
}

func signalProto(s string) string {
	switch s {
	case "tgkill":
		return "tgkill(tgid, tid, sig)"
	case "rt_tgsigqueueinfo":
		return "rt_tgsigqueueinfo(tgid, tid, sig, info)"
	case "kill":
		return "kill(pid, sig)"
	case "tkill":
		return "tkill(tid, sig)"
	case "rt_sigqueueinfo":
		return "rt_sigqueueinfo(tgid, sig, info)"
	case "pidfd_send_signal":
		return "pidfd_send_signal(pidfd, sig, info, flags)"
	}
	return s
}

func argName(syscall string, reg int) string {
	if syscall == "tgkill" || syscall == "rt_tgsigqueueinfo" {
		switch reg {
		case 0:
			return "tgid"
		case 1:
			return "tid"
		}
	}
	return fmt.Sprintf("a%d", reg)
}

// ruleText writes a rule with other syscalls, in auditctl syntax.
func ruleText(r *Rule, syscalls []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-a %s,%s", r.Action, r.List)
	if r.Arch != "" {
		b.WriteString(" -F arch=" + r.Arch)
	}
	b.WriteString(" -S " + strings.Join(syscalls, ","))
	for _, f := range r.Fields {
		b.WriteString(" -F " + f)
	}
	if r.Key != "" {
		b.WriteString(" -k " + r.Key)
	}
	return b.String()
}

// aliases names, for syscalls of table from, the syscall of table to with
// the same number ("write is exit there").
func aliases(names []string, from, to string) []string {
	num := numbers(from)
	var out []string
	for _, n := range names {
		nr, ok := num[n]
		if !ok {
			continue
		}
		if other := auparse.AuditSyscalls[to][nr]; other != "" && other != n {
			out = append(out, fmt.Sprintf("%s is %s there", n, other))
		}
	}
	return out
}

// hotAliases names the hot syscalls of table to whose numbers the
// syscalls of table from share.
func hotAliases(names []string, from, to string) []string {
	num := numbers(from)
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		nr, ok := num[n]
		if !ok {
			continue
		}
		other := auparse.AuditSyscalls[to][nr]
		if hotSet[other] && !seen[other] {
			seen[other] = true
			out = append(out, fmt.Sprintf("%s (b32 %s)", other, n))
		}
	}
	return out
}

func numbers(table string) map[string]int {
	m := map[string]int{}
	for nr, name := range auparse.AuditSyscalls[table] {
		m[name] = nr
	}
	return m
}

func hotChecksText(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%s: %d", e.k, e.v))
	}
	return "rules checked per 64-bit call: " + strings.Join(limit(parts, 6), ", ")
}

// limit keeps the first n of s and says how many more there were.
func limit(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
}
