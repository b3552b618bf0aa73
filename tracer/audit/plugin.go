// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
)

// Plugin mode: auditd starts tracer as a plugin (plugins.d, format =
// string) and writes every record to its stdin, one line each, as its log
// has them. Where the kernel's multicast group delivers nothing (before
// 3.16, RHEL 7's 3.10) this is the way to read beside auditd; it needs no
// netlink socket, no rule and no setting.

// pluginSource is the plugin output the backend reads.
type pluginSource struct{ r io.Reader }

// FromAuditd makes the backend read auditd's plugin output from r instead
// of the kernel, following the keys given with Follow (none: every
// record). Call it before Start.
func (b *Backend) FromAuditd(r io.Reader) { b.src = &pluginSource{r: r} }

// recordTypes maps the record type names of auditd's output to the
// kernel's numbers, for the types the reassembler reads.
var recordTypes = map[string]uint16{
	"SYSCALL": auparse.TypeSyscall, "EXECVE": auparse.TypeExecve, "PATH": auparse.TypePath,
	"OBJ_PID": auparse.TypeObjPID, "EOE": auparse.TypeEOE, "ANOM_ABEND": typeAnomAbend,
}

func (b *Backend) startPlugin() error {
	b.newReassembler()
	plan := auditrules.Follow{Keys: b.fo.keys, Any: len(b.fo.keys) == 0, Covers: b.cfg.Types}
	if !plan.Any {
		b.r.keys = make([][]byte, len(plan.Keys))
		for i, k := range plan.Keys {
			b.r.keys[i] = []byte(k)
		}
	}
	// auditd passes EOE on to its plugins; where the node's exclude
	// rules drop it, the sweep ends whole events.
	b.fo.plan, b.fo.on = plan, true
	keys := "every record"
	if !plan.Any {
		keys = "keys " + strings.Join(plan.Keys, ",")
	}
	b.note(fmt.Sprintf("reading auditd's plugin output on stdin (%s), adding no rules", keys))
	b.started.Store(true)
	return nil
}

// pluginLineMax bounds a line: a record is at most 8,970 bytes, and
// auditd's enriched fields add a few hundred.
const pluginLineMax = 64 << 10

// pluginDrainQuiet ends the read of auditd's output after a stop when no
// line came for this long and the pipe is still open.
const pluginDrainQuiet = 500 * time.Millisecond

// runPlugin feeds the lines of auditd's output to the reassembler until
// the output ends (auditd stopped) or ctx is done.
func (b *Backend) runPlugin(ctx context.Context, emit func(*tracer.Event)) error {
	count := func(e *tracer.Event) {
		b.delivered[e.Type].Add(1)
		emit(e)
	}
	lines := make(chan []byte, 1024)
	readErr := make(chan error, 1)
	go func() {
		// A read of stdin cannot be interrupted: the goroutine ends with
		// the pipe, or the process.
		defer close(lines)
		br := bufio.NewReaderSize(b.src.r, pluginLineMax)
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n') // no record is this long
				}
				continue
			}
			if len(line) > 0 {
				lines <- append([]byte(nil), line...)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr <- err
				}
				return
			}
		}
	}()
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	feed := func(line []byte) {
		typ, msg, ok := auparse.LogRecord(line)
		if !ok {
			return
		}
		if t, ok := recordTypes[typ]; ok {
			b.r.feed(t, msg, count)
		}
	}
	end := func() error {
		b.r.flush(count)
		b.r.flushLimit(time.Now(), count)
		b.lostReasm.Store(b.r.lost + b.r.bad)
		b.storeThrottled()
		select {
		case err := <-readErr:
			return fmt.Errorf("reading auditd's output: %w", err)
		default:
			return nil
		}
	}
	for {
		select {
		case <-ctx.Done():
			// auditd sends SIGTERM and then closes the pipe: what it
			// wrote before is still to read, up to the end or a pause.
			quiet := time.NewTimer(pluginDrainQuiet)
			defer quiet.Stop()
			for {
				select {
				case line, ok := <-lines:
					if !ok {
						return end()
					}
					feed(line)
					quiet.Reset(pluginDrainQuiet)
				case <-quiet.C:
					return end()
				}
			}
		case line, ok := <-lines:
			if !ok {
				return end()
			}
			feed(line)
			b.lostReasm.Store(b.r.lost + b.r.bad)
			for i, n := range b.r.filtered {
				b.filtered[i].Store(n)
			}
		case now := <-tick.C:
			if b.r.limit != nil {
				b.r.sweepLimit(now, count)
			}
			b.r.sweep(count)
			b.lostReasm.Store(b.r.lost + b.r.bad)
			b.storeThrottled()
		}
	}
}
