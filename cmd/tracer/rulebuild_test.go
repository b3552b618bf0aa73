// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/elastic/go-libaudit/v2/rule"
	"github.com/elastic/go-libaudit/v2/rule/flags"
)

func buildRule(t *testing.T, text string) rule.WireFormat {
	t.Helper()
	r, err := flags.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := rule.Build(r)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func ruleText(t *testing.T, wf rule.WireFormat) string {
	t.Helper()
	s, err := rule.ToCommandLine(wf, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
