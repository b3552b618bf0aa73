// SPDX-License-Identifier: Apache-2.0

// Command tracer shows who forks, execs and signals what on a Linux node, and
// what watching it costs, with the audit subsystem or with eBPF.
package main

import "os"

func main() { os.Exit(run(os.Args[1:])) }
