package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// ErrExited is returned for every request once the sidecar process is gone.
var ErrExited = errors.New("devkit sidecar exited")

// Error is a request the sidecar answered with an error: the error the
// package (or the sidecar) threw, by its name, message and code.
type Error struct {
	Op      string
	Name    string `json:"name"`
	Message string `json:"message"`
	// Code is a system or PostgreSQL error code ("ECONNREFUSED", "57P01"),
	// when the error had one.
	Code string `json:"code"`
	// Status is the HTTP status the package's error class carries, if any.
	Status int `json:"status"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("devkit sidecar %s: %s: %s", e.Op, e.Name, e.Message)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	return s
}

type response struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// idOf reads the id an answer line starts with ({"id":N,...}), so that the
// reader hands each line on without decoding it.
func idOf(line []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"id":`))
	if !ok {
		return 0, false
	}
	var id int64
	n := 0
	for ; n < len(rest) && rest[n] >= '0' && rest[n] <= '9'; n++ {
		id = id*10 + int64(rest[n]-'0')
	}
	return id, n > 0
}

// Process is a running sidecar. Its methods are safe for concurrent use.
type Process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	g     errgroup.Group

	wmu sync.Mutex // one request line at a time on stdin

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan []byte
	exitErr error // set once the process is gone
	stderr  *ring
	notice  func([]byte)

	stopOnce sync.Once
	stopErr  error
}

// Start runs the sidecar of l under node. The process ends with Stop, or by
// itself when this process dies (its stdin closes). It answers on a pipe
// of its own (its file descriptor 3); its stdout and stderr are kept for
// the error that reports its exit.
func Start(l Layout) (*Process, error) {
	var args []string
	for _, kv := range [][2]string{{"--local", l.Local}, {"--postgres", l.Postgres}, {"--vercel", l.Vercel}, {"--package", l.Package}} {
		if kv[1] != "" {
			args = append(args, kv[0], kv[1])
		}
	}
	var env []string
	if len(l.Env) > 0 {
		env = append(os.Environ(), l.Env...)
	}
	return StartCommand(Command{
		Script: l.Script, Args: args, Env: env,
		Dir: os.TempDir(), // the packages resolve relative paths (.workflow-data) from here; nothing is written
	})
}

// Command is a Node script speaking the sidecar's protocol: requests on
// its stdin, answers (and notices) as JSON lines on its file descriptor 3.
type Command struct {
	Script string
	Args   []string
	// Dir is the script's working directory; Env, when not nil, its whole
	// environment (nil: this process's).
	Dir string
	Env []string
	// Notice, if set, gets every line on the answer pipe that starts with
	// {"notice": (a line the script writes of its own accord, not an
	// answer), in the order written, on the pipe's reader: it must not
	// block for long. The line is the callee's to keep.
	Notice func(line []byte)
}

// StartCommand runs c under node, in a process group of its own. The
// process ends with Stop, or by itself when this process dies (its stdin
// closes); its stdout and stderr are kept for the error that reports its
// exit.
func StartCommand(c Command) (*Process, error) {
	cmd := exec.Command("node", append([]string{c.Script}, c.Args...)...)
	cmd.SysProcAttr = procAttr()
	cmd.Dir, cmd.Env = c.Dir, c.Env
	p := &Process{cmd: cmd, pending: map[int64]chan []byte{}, stderr: &ring{max: 4 << 10}, notice: c.Notice}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("devkit: start %s: %w", c.Script, err)
	}
	answers, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("devkit: start %s: %w", c.Script, err)
	}
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		answers.Close()
		return nil, fmt.Errorf("devkit: start %s: %w", c.Script, err)
	}
	p.stdin = stdin
	p.g.Go(func() error {
		p.read(answers)
		answers.Close()
		err := cmd.Wait()
		p.fail(fmt.Errorf("%w (%v): %s", ErrExited, err, tail(p.stderr.String(), 800)))
		return nil
	})
	return p, nil
}

// PID returns the sidecar's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// read hands each answer line to its request until the pipe ends; the
// request decodes it, so the reader keeps up with the sidecar.
func (p *Process) read(answers io.Reader) {
	sc := bufio.NewScanner(answers)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		id, ok := idOf(sc.Bytes())
		if !ok && p.notice != nil && bytes.HasPrefix(sc.Bytes(), []byte(`{"notice":`)) {
			p.notice(bytes.Clone(sc.Bytes()))
			continue
		}
		if !ok {
			p.stderr.Write([]byte("stormctl: unreadable sidecar answer\n"))
			continue
		}
		p.mu.Lock()
		ch, ok := p.pending[id]
		delete(p.pending, id)
		p.mu.Unlock()
		if ok {
			ch <- bytes.Clone(sc.Bytes())
		}
	}
	_, _ = io.Copy(io.Discard, answers)
}

// fail ends every pending and later request with err.
func (p *Process) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exitErr == nil {
		p.exitErr = err
	}
	for id, ch := range p.pending {
		delete(p.pending, id)
		ch <- nil
	}
}

// Call sends op with args (the fields of the request besides id and op) and
// decodes the result into out (nil: discard it). It returns an *Error when
// the sidecar answered with one, wraps ErrExited when the process is gone,
// and returns ctx's error when ctx ends first. A create then has its window
// cancelled: if the window is still open, its sleep rejects with an
// AbortError before the package writes the event (world-local's event file,
// world-postgres's INSERT), so that create fails and its event is never
// published; a create already past its window carries on, as a write whose
// caller gave up does.
func (p *Process) Call(ctx context.Context, op string, args map[string]any, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	if p.exitErr != nil {
		err := p.exitErr
		p.mu.Unlock()
		return err
	}
	p.nextID++
	id := p.nextID
	ch := make(chan []byte, 1)
	p.pending[id] = ch
	p.mu.Unlock()

	req := make(map[string]any, len(args)+2)
	for k, v := range args {
		req[k] = v
	}
	req["id"], req["op"] = id, op
	line, err := json.Marshal(req)
	if err != nil {
		p.forget(id)
		return fmt.Errorf("devkit sidecar %s: %w", op, err)
	}
	if err := p.send(line); err != nil {
		p.forget(id)
		return err
	}
	select {
	case line := <-ch:
		if line == nil {
			return p.exited()
		}
		var r response
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("devkit sidecar %s: unreadable answer: %w", op, err)
		}
		switch {
		case r.Error != nil:
			r.Error.Op = op
			return r.Error
		case r.Result == nil:
			return p.exited()
		case out != nil:
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("devkit sidecar %s: unreadable result: %w", op, err)
			}
		}
		return nil
	case <-ctx.Done():
		p.forget(id)
		if op == "create" {
			if line, err := json.Marshal(map[string]any{"id": 0, "op": "cancel", "target": id}); err == nil {
				_ = p.send(line)
			}
		}
		return ctx.Err()
	}
}

func (p *Process) send(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%w: %v", p.exited(), err)
	}
	return nil
}

func (p *Process) forget(id int64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

func (p *Process) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exitErr != nil {
		return p.exitErr
	}
	return ErrExited
}

// stopGrace is how long Stop waits for the sidecar to close its worlds and
// exit before it kills the process group.
const stopGrace = 10 * time.Second

// Stop closes the sidecar's stdin (it closes its worlds and exits), waits
// for it, and kills its process group if it has not exited by stopGrace.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		p.wmu.Lock()
		p.stdin.Close()
		p.wmu.Unlock()
		done := make(chan struct{})
		go func() { _ = p.g.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopGrace):
			p.stopErr = fmt.Errorf("devkit: the sidecar (pid %d) did not exit within %s of its stdin closing: killed", p.PID(), stopGrace)
			_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
			<-done
		}
	})
	return p.stopErr
}

// ring keeps the last max bytes written to it.
type ring struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (r *ring) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b = append(r.b, b...)
	if over := len(r.b) - r.max; over > 0 {
		r.b = bytes.Clone(r.b[over:])
	}
	return len(b), nil
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.b)
}
