// SPDX-License-Identifier: Apache-2.0

package auditrules

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// A node's loaded rules, as the kernel lists them (auditctl -l, go-libaudit's
// rule.ToCommandLine): persisted tracer rules under two keys, a STIG-like
// exec rule, a watch, another program's rule with no key, a tracer's own.
var nodeRules = []string{
	"-a always,exit -F arch=b64 -S execve,execveat -F success=1 -F key=tracer",
	"-a always,exit -F arch=b64 -S fork,vfork,clone,clone3 -F key=tracer",
	"-a always,exit -F arch=b64 -S kill,tkill,rt_sigqueueinfo,pidfd_send_signal -F a1!=0 -F key=tracer",
	"-a always,exit -F arch=b64 -S tgkill -F a2!=0 -F a2!=0x17 -F key=tracer",
	"-a always,exit -F arch=b64 -S execve -F auid>=1000 -F auid!=-1 -F key=user_cmds",
	"-w /usr/bin/sudo -p x -k priv",
	"-w /etc/shadow -p wa -k identity",
	"-a always,exit -F arch=b64 -S kill",
	"-a always,exit -F arch=b64 -S execve -F key=tracer-4242-9999",
	"-a never,exclude -F msgtype=PROCTITLE",
	"-a always,exit -F arch=b64 -S mount -F key=mounts",
}

var allTypes = func() vocab.TypeSet {
	s, _ := vocab.ParseTypes("exec,fork,signal")
	return s
}()

func TestParseLoaded(t *testing.T) {
	for _, c := range []struct {
		text   string
		keys   []string
		covers string
	}{
		{nodeRules[0], []string{"tracer"}, "exec"},
		{nodeRules[2], []string{"tracer"}, "signal"},
		{nodeRules[5], []string{"priv"}, "exec"},
		{nodeRules[6], []string{"identity"}, ""},
		{nodeRules[7], nil, "signal"},
		{nodeRules[9], nil, ""},
		{"-a always,exit -S all -k everything", []string{"everything"}, "exec,fork,signal,exit"},
		{"-a never,exit -S execve -k quiet", []string{"quiet"}, ""},
		{"-a always,exit -F arch=b64 -S execve -k a -k b", []string{"a", "b"}, "exec"},
		{"-a always,exit -F arch=b64 -S execve -F key=a\x01b", []string{"a", "b"}, "exec"},
		{"-a always,exit -F arch=b64 -S exit_group -S kill -k x", []string{"x"}, "signal,exit"},
		// STIG's, as the kernel lists them: perm=x is execs of the file.
		{"-a always,exit -S all -F path=/usr/bin/sudo -F perm=x -F auid>=1000 -F auid!=-1 -F key=priv_cmd", []string{"priv_cmd"}, "exec"},
		{"-a always,exit -S all -F path=/etc/shadow -F perm=wa -F key=identity", []string{"identity"}, ""},
	} {
		r := ParseLoaded(c.text)
		var want vocab.TypeSet
		if c.covers != "" {
			want, _ = vocab.ParseTypes(c.covers)
		}
		if !slices.Equal(r.Keys, c.keys) || r.Covers != want {
			t.Errorf("ParseLoaded(%q) = keys %q covers %s, want %q %s", c.text, r.Keys, r.Covers, c.keys, want)
		}
	}
}

func TestPlanFollow(t *testing.T) {
	plan, err := PlanFollow(nodeRules, []string{"tracer"}, false, allTypes)
	if err != nil || !slices.Equal(plan.Keys, []string{"tracer"}) || plan.Any || plan.Rules != 4 || plan.Covers != allTypes {
		t.Errorf("--keys tracer: %+v, %v", plan, err)
	}
	plan, err = PlanFollow(nodeRules, []string{"user_cmds", "priv"}, false, allTypes)
	exec, _ := vocab.ParseTypes("exec")
	if err != nil || !slices.Equal(plan.Keys, []string{"user_cmds", "priv"}) || plan.Rules != 2 || plan.Covers != exec {
		t.Errorf("--keys user_cmds,priv: %+v, %v", plan, err)
	}
	// A key no loaded rule has: a usage error that says how to load it.
	_, err = PlanFollow(nodeRules, []string{"tracer", "nope"}, false, allTypes)
	if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "tracer rules --key nope > /etc/audit/rules.d/nope.rules && auditctl -R /etc/audit/rules.d/nope.rules") {
		t.Errorf("unknown key: %v", err)
	}
	// A key whose rules record nothing the watch wants.
	_, err = PlanFollow(nodeRules, []string{"identity"}, false, allTypes)
	if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "record no") {
		t.Errorf("key of a write watch: %v", err)
	}
	sig, _ := vocab.ParseTypes("signal")
	if _, err := PlanFollow(nodeRules, []string{"user_cmds"}, false, sig); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("exec key for --events signal: %v", err)
	}
	// --rules existing: every rule recording what is wanted, any key.
	plan, err = PlanFollow(nodeRules, nil, true, allTypes)
	if err != nil || !plan.Any || plan.Rules != 8 || !slices.Equal(plan.Keys, []string{"tracer", "user_cmds", "priv", "tracer-4242-9999"}) {
		t.Errorf("--rules existing: %+v, %v", plan, err)
	}
	if _, err := PlanFollow(nodeRules[6:7], nil, true, allTypes); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("--rules existing with no rule that records events: %v", err)
	}
}

func TestPlanLocked(t *testing.T) {
	// Locked, no --keys: every key of rules that record what is wanted,
	// but a running tracer's own (its rules go with it).
	plan, err := PlanLocked(nodeRules, allTypes)
	if err != nil || plan.Any || !slices.Equal(plan.Keys, []string{"tracer", "user_cmds", "priv"}) || plan.Rules != 6 || plan.Covers != allTypes {
		t.Errorf("locked: %+v, %v", plan, err)
	}
	sig, _ := vocab.ParseTypes("signal")
	if plan, err = PlanLocked(nodeRules, sig); err != nil || !slices.Equal(plan.Keys, []string{"tracer"}) || plan.Rules != 2 {
		t.Errorf("locked, --events signal: %+v, %v", plan, err)
	}
	// Nothing keyed that records events: a usage error naming the ways out.
	for _, rules := range [][]string{nil, {nodeRules[6], nodeRules[7], nodeRules[8], nodeRules[10]}} {
		_, err := PlanLocked(rules, allTypes)
		if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "locked") || !strings.Contains(err.Error(), "reboot") || !strings.Contains(err.Error(), "--backend ebpf") {
			t.Errorf("locked without keyed rules %q: %v", rules, err)
		}
	}
}

func TestCheckFollowKey(t *testing.T) {
	for _, k := range []string{"tracer", "user_cmds", "a-b", strings.Repeat("k", 255)} {
		if err := CheckFollowKey(k); err != nil {
			t.Errorf("CheckFollowKey(%q): %v", k, err)
		}
	}
	for _, k := range []string{"", "a b", `a"b`, "a'b", "a,b", strings.Repeat("k", 256)} {
		if err := CheckFollowKey(k); !errors.Is(err, vocab.ErrUsage) {
			t.Errorf("CheckFollowKey(%q) = %v, want a usage error", k, err)
		}
	}
}
