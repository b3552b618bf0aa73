// SPDX-License-Identifier: Apache-2.0

package schematest

import (
	"strings"
	"testing"
)

const goodECS = `{"@timestamp":"2026-12-01T10:00:00.5Z","ecs":{"version":"9.4.0"},"event":{"kind":"event","category":["process"],"type":["start"],"action":"exec"},"process":{"pid":42,"args":["ls","-l"],"args_count":2,"entity_id":"x"},"user":{"id":"0"},"tracer":{"anything":[{"at":"all"}]}}`

func TestECSAcceptsECS(t *testing.T) {
	if err := ECS([]byte(goodECS)); err != nil {
		t.Fatal(err)
	}
}

// The checker finds what breaks ECS: each document is goodECS with one
// mistake, and the error names it.
func TestECSRejects(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{strings.Replace(goodECS, `"pid":42`, `"pid":"42"`, 1), "process.pid"},
		{strings.Replace(goodECS, `"pid":42`, `"pid":4.5`, 1), "process.pid"},
		{strings.Replace(goodECS, `"pid":42`, `"pid":42,"comm":"ls"`, 1), "process.comm is not an ECS"},
		{strings.Replace(goodECS, `"args":["ls","-l"]`, `"args":"ls -l"`, 1), "process.args"},
		{strings.Replace(goodECS, `"id":"0"`, `"id":["0"]`, 1), "user.id is an array"},
		{strings.Replace(goodECS, `"kind":"event"`, `"kind":"happening"`, 1), "event.kind"},
		{strings.Replace(goodECS, `"type":["start"]`, `"type":["creation"]`, 1), "event.type creation is not one event.category process expects"},
		{strings.Replace(goodECS, `"2026-12-01T10:00:00.5Z"`, `"yesterday"`, 1), "@timestamp"},
		{strings.Replace(goodECS, `"ecs":{"version":"9.4.0"},`, ``, 1), "ecs.version missing"},
		{goodECS[:len(goodECS)-1], "not a JSON object"},
	} {
		err := ECS([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ECS(%s) = %v, want an error with %q", c.doc, err, c.want)
		}
	}
}

const goodOCSF = `{"activity_id":1,"category_uid":1,"class_uid":1007,"type_uid":100701,"severity_id":1,"time":1764583200000,"metadata":{"version":"1.8.0","product":{"name":"tracer"}},"device":{"type_id":0,"hostname":"node1"},"actor":{"process":{"pid":1}},"process":{"pid":2,"uid":"a:1:2","auid":1000,"user":{"uid":"0"},"file":{"name":"ls","type_id":1}}}`

func TestOCSFAcceptsOCSF(t *testing.T) {
	if err := OCSF([]byte(goodOCSF)); err != nil {
		t.Fatal(err)
	}
}

// The schema finds what breaks OCSF: each document is goodOCSF with one
// mistake.
func TestOCSFRejects(t *testing.T) {
	for _, c := range []struct{ doc, what string }{
		{strings.Replace(goodOCSF, `"class_uid":1007,`, ``, 1), "class_uid missing"},
		{strings.Replace(goodOCSF, `"class_uid":1007`, `"class_uid":1001`, 1), "another class"},
		{strings.Replace(goodOCSF, `"activity_id":1`, `"activity_id":6`, 1), "an activity Process Activity lacks"},
		{strings.Replace(goodOCSF, `"type_uid":100701`, `"type_uid":100706`, 1), "a type_uid of no activity"},
		{strings.Replace(goodOCSF, `"time":1764583200000`, `"time":"2026-12-01T10:00:00Z"`, 1), "time a string"},
		{strings.Replace(goodOCSF, `"pid":2`, `"pid":2,"comm":"ls"`, 1), "an attribute process lacks"},
		{strings.Replace(goodOCSF, `"uid":"0"`, `"uid":0`, 1), "user.uid a number"},
		{strings.Replace(goodOCSF, `"actor":{"process":{"pid":1}},`, ``, 1), "actor missing"},
		{strings.Replace(goodOCSF, `"actor":{"process":{"pid":1}}`, `"actor":{}`, 1), "an empty actor"},
		{strings.Replace(goodOCSF, `"name":"ls","type_id":1`, `"name":"ls"`, 1), "file.type_id missing"},
		{strings.Replace(goodOCSF, `"product":{"name":"tracer"}`, `"product":{}`, 1), "a product with neither name nor uid"},
	} {
		if err := OCSF([]byte(c.doc)); err == nil {
			t.Errorf("OCSF accepted %s: %s", c.what, c.doc)
		}
	}
}
