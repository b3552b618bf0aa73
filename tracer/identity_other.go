//go:build !linux

package tracer

func readBootID() []byte { return nil }

func readProcLineage(ExecID) (string, ExecID, bool) { return "", ExecID{}, false }
