package tracer

import (
	"bufio"
	"io"
	"os"
	"sync"
)

// bufSink is the buffered, lockable writer both formats share.
type bufSink struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	c   io.Closer
}

func (s *bufSink) init(w io.Writer) {
	s.w, s.buf = bufio.NewWriterSize(w, 256<<10), make([]byte, 0, 1024)
	// Closing stdout would hide later messages; close only files we were given.
	if c, ok := w.(io.Closer); ok && w != io.Writer(os.Stdout) {
		s.c = c
	}
}

func (s *bufSink) write(b []byte) error {
	s.mu.Lock()
	_, err := s.w.Write(b)
	s.mu.Unlock()
	return err
}

func (s *bufSink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Flush()
}

func (s *bufSink) Close() error {
	err := s.Flush()
	if s.c != nil {
		if cerr := s.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
