package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the MCP transport over newline-delimited JSON-RPC on stdin and
// stdout (SPEC MCP-1) that real clients and pipes need:
//
//   - A line that is not JSON gets a -32700 error, one that is not a
//     JSON-RPC 2.0 message a -32600 (with its id when one could be read),
//     and the server goes on serving: proxies and programs that log to the
//     wrong stream do send such lines (CLIENTS.md). go-sdk's own stdio
//     transport ends the connection, and every session with it.
//   - At the end of input, every request read before it is answered
//     before the connection ends: `termhost serve < requests.jsonl` gets
//     its answers. With nothing in flight it ends at once.
//   - A line longer than MaxLine is refused without being held in memory.
//   - Once the session is initialized, a tools/call for a tool Tools knows
//     is served by the transport itself, straight from the line it read to
//     the line it writes (see "tools/call on the direct path" in
//     docs/RATIONALE.md); everything else goes through go-sdk.
type Stdio struct {
	In      io.Reader    // default os.Stdin
	Out     io.Writer    // default os.Stdout
	MaxLine int          // default 64 MiB
	Logger  *slog.Logger // default: none
	// Tools finds a tool by name: its name as registered and its handler;
	// nil: every call goes through go-sdk.
	Tools func(name []byte) (registered string, h sdk.ToolHandler, ok bool)
}

// DefaultMaxLine bounds one JSON-RPC line.
const DefaultMaxLine = 64 << 20

// Connect implements sdk.Transport.
func (t *Stdio) Connect(context.Context) (sdk.Connection, error) {
	in, out := t.In, t.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	max := t.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &stdioConn{
		tools:   t.Tools,
		work:    make(chan *directCall),
		log:     log,
		out:     out,
		max:     max,
		msgs:    make(chan msgOrErr),
		closed:  make(chan struct{}),
		pending: make(map[reqKey]*directCall),
		settled: make(chan struct{}, 1),
	}
	c.wcond.L = &c.writeMu
	c.notify = c.notifyProgress
	go c.readLoop(bufio.NewReaderSize(in, 64<<10))
	return c, nil
}

type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

type stdioConn struct {
	tools  func([]byte) (string, sdk.ToolHandler, bool)
	work   chan *directCall // direct-path calls for idle workers
	notify notifier         // notifyProgress, made once
	log    *slog.Logger
	out    io.Writer
	max    int

	writeMu           sync.Mutex   // guards the write queue
	wbuf, wspare      []byte       // lines to write; the last batch's buffer, for the next
	wkeys, wspareKeys []reqKey     // the requests wbuf answers
	writing           bool         // a writeLine is writing
	wcond             sync.Cond    // on writeMu: a batch was written
	werr              error        // the first write error
	running           atomic.Int32 // direct-path calls being served

	msgs      chan msgOrErr
	closed    chan struct{}
	closeOnce sync.Once

	mu          sync.Mutex
	pending     map[reqKey]*directCall // requests read and not yet answered: the call, on the direct path
	settled     chan struct{}          // signalled when pending empties
	initialized bool                   // the client sent notifications/initialized
}

func (c *stdioConn) SessionID() string { return "" }

// Read implements sdk.Connection.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.msgs:
		return m.msg, m.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements sdk.Connection.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	var key reqKey
	if r, ok := msg.(*jsonrpc.Response); ok {
		key = idKey(r.ID)
	}
	return c.writeLine(data, key)
}

// writeLine writes a line, and then (key not empty) marks its request
// answered. Lines written while another write is under way are queued,
// and the writer writes them too, in one write per batch: under load
// several results are often ready at once, and one write of all of them
// costs one system call and one wake-up of the client, not one each
// (issue 19). A queued line's request is marked answered only once it
// has been written, so the end of input still waits for every answer.
// A write error is returned to the writer and to every later call, and
// closes the connection.
func (c *stdioConn) writeLine(data []byte, key reqKey) error {
	c.writeMu.Lock()
	for c.writing && len(c.wbuf) >= maxQueuedWrite && c.werr == nil {
		c.wcond.Wait() // a client that does not read holds its calls back, as before
	}
	if c.werr != nil {
		err := c.werr
		c.writeMu.Unlock()
		if key != noKey {
			c.answered(key)
		}
		return err
	}
	c.wbuf = append(append(c.wbuf, data...), '\n')
	if key != noKey {
		c.wkeys = append(c.wkeys, key)
	}
	if c.writing {
		c.writeMu.Unlock()
		return nil // the writer under way writes it
	}
	c.writing = true
	if c.running.Load() > 1 {
		// Other calls are running: let those about to answer queue
		// their lines first, so one write carries them all.
		c.writeMu.Unlock()
		runtime.Gosched()
		c.writeMu.Lock()
	}
	var err error
	for len(c.wbuf) > 0 {
		buf, keys := c.wbuf, c.wkeys
		c.wbuf, c.wkeys = c.wspare[:0], c.wspareKeys[:0]
		c.writeMu.Unlock()
		_, werr := c.out.Write(buf)
		c.answeredAll(keys)
		c.writeMu.Lock()
		if werr != nil && err == nil {
			err, c.werr = werr, werr
			// Nothing can be answered any more (the client closed its
			// end): the connection ends as at the end of input, and the
			// server with it, rather than serving calls no one hears.
			c.Close()
		}
		if cap(buf) > maxSpareWrite {
			buf = nil
		}
		c.wspare, c.wspareKeys = buf[:0], keys[:0]
		c.wcond.Broadcast()
	}
	c.writing = false
	c.writeMu.Unlock()
	return err
}

// maxQueuedWrite bounds the lines queued behind a write under way; more
// wait for it.
const maxQueuedWrite = 4 << 20

// linePool holds the buffers results are built in: writeLine copies a
// line into its queue, so the buffer is free again once it returns.
var linePool = sync.Pool{New: func() any { return new([]byte) }}

func getBuf() *[]byte { return linePool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 {
		*b = (*b)[:0]
		linePool.Put(b)
	}
}

// maxSpareWrite bounds the write buffer kept between batches.
const maxSpareWrite = 1 << 20

// Close implements sdk.Connection.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// readLoop reads lines until the end of input, hands valid messages to
// Read, answers invalid ones itself, and at the end waits for the requests
// in flight to be answered before reporting EOF.
func (c *stdioConn) readLoop(r *bufio.Reader) {
	for {
		line, tooLong, err := c.readLine(r)
		line = bytes.TrimSpace(line)
		switch {
		case tooLong:
			c.reject(jsonrpc.CodeInvalidRequest, nil, fmt.Sprintf("message longer than %d bytes", c.max))
		case len(line) > 0:
			if msg := c.parse(line); msg != nil {
				select {
				case c.msgs <- msgOrErr{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			if n := c.inFlightCount(); n > 0 {
				c.log.Info("input closed; answering requests in flight", "requests", n)
			}
			c.drain()
			select {
			case c.msgs <- msgOrErr{err: io.EOF}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads one line, without its newline. A line longer than the
// limit is skipped up to its newline (tooLong), never held whole.
func (c *stdioConn) readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if line == nil && !tooLong && err == nil && len(frag) <= c.max+1 {
			// The usual line, whole in the buffer: one copy of its size.
			return bytes.Clone(frag[:len(frag)-1]), false, nil
		}
		if !tooLong {
			if len(line)+len(frag) > c.max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}

// envelope is a JSON-RPC 2.0 message as it comes, for checking.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`

	call fastCall // params read by fastEnvelope as a tools/call's
}

// parse checks one line and returns its message, or answers the error and
// returns nil.
func (c *stdioConn) parse(line []byte) jsonrpc.Message {
	// The usual request is read in one pass (fastEnvelope); anything
	// else, and every error, by encoding/json.
	e, fast := fastEnvelope(line)
	var err error
	if !fast {
		e = envelope{}
		err = json.Unmarshal(line, &e)
	}
	if err != nil && !json.Valid(line) {
		c.reject(jsonrpc.CodeParseError, nil, "parse error: the line is not JSON")
		return nil
	}
	if line[0] != '{' {
		what := "a JSON " + map[byte]string{'[': "array (batches are not supported)", '"': "string", 'n': "null", 't': "boolean", 'f': "boolean"}[line[0]]
		if line[0] >= '0' && line[0] <= '9' || line[0] == '-' {
			what = "a JSON number"
		}
		c.reject(jsonrpc.CodeInvalidRequest, nil, "invalid request: expected a JSON-RPC 2.0 message object, got "+what)
		return nil
	}
	if err != nil {
		c.reject(jsonrpc.CodeInvalidRequest, nil, "invalid request: "+err.Error())
		return nil
	}
	id, idErr := parseID(e.ID)
	switch {
	case idErr != nil:
		c.reject(jsonrpc.CodeInvalidRequest, nil, "invalid request: "+idErr.Error())
		return nil
	case e.JSONRPC == nil || *e.JSONRPC != "2.0":
		got := "none"
		if e.JSONRPC != nil {
			got = strconv.Quote(*e.JSONRPC)
		}
		c.reject(jsonrpc.CodeInvalidRequest, id, `invalid request: "jsonrpc" must be "2.0", got `+got)
		return nil
	case e.Method != nil:
		if *e.Method == "" {
			c.reject(jsonrpc.CodeInvalidRequest, id, `invalid request: "method" is empty`)
			return nil
		}
		if len(e.Params) > 0 && e.Params[0] != '{' && string(e.Params) != "null" {
			c.reject(jsonrpc.CodeInvalidParams, id, `invalid params: "params" must be an object`)
			return nil
		}
		if id.IsValid() && !c.inFlight(idKey(id), *e.Method) {
			// Answered with no id: the request already running keeps its own.
			c.reject(jsonrpc.CodeInvalidRequest, nil, fmt.Sprintf("invalid request: id %v is already in use by a request in flight", id.Raw()))
			return nil
		}
		switch *e.Method {
		case "notifications/cancelled":
			c.cancelled(e.Params)
		case "notifications/initialized":
			c.mu.Lock()
			c.initialized = true
			c.mu.Unlock()
		case "tools/call":
			if id.IsValid() && c.serve(id, e.Params, e.call) {
				return nil
			}
		}
		return &jsonrpc.Request{ID: id, Method: *e.Method, Params: e.Params}
	case !id.IsValid() || e.Result == nil && e.Error == nil:
		// A broken response is not answered (two peers must not trade
		// errors for ever); it is dropped with a log line.
		c.log.Warn("dropped a malformed message from the client: no method, and not a response with an id and a result or an error", "line", clip(string(line)))
		return nil
	}
	r := &jsonrpc.Response{ID: id, Result: e.Result}
	if e.Error != nil {
		r.Error = e.Error
	}
	return r
}

// parseID reads a JSON-RPC id: absent, a string or an integer.
func parseID(raw json.RawMessage) (jsonrpc.ID, error) {
	if len(raw) == 0 {
		return jsonrpc.ID{}, nil
	}
	// The usual ids, a small integer or a string without escapes, are read
	// as they are, without a decoder (two of them per round trip under load).
	if n, ok := plainInt(raw); ok {
		return jsonrpc.MakeID(float64(n))
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && plainString(raw[1:len(raw)-1]) {
		return jsonrpc.MakeID(string(raw[1 : len(raw)-1]))
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return jsonrpc.ID{}, err
	}
	switch x := v.(type) {
	case string:
		return jsonrpc.MakeID(x)
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return jsonrpc.ID{}, fmt.Errorf(`"id" must be a string or an integer, got %s`, x)
		}
		return jsonrpc.MakeID(float64(n))
	}
	return jsonrpc.ID{}, fmt.Errorf(`"id" must be a string or an integer, got %s`, describe(v))
}

// reject answers a line that cannot be served.
func (c *stdioConn) reject(code int64, id any, msg string) {
	resp := map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}}
	if i, ok := id.(jsonrpc.ID); ok && i.IsValid() {
		resp["id"] = i.Raw()
	}
	data, _ := json.Marshal(resp)
	c.writeLine(data, noKey)
}

// plainInt reads an integer literal of at most 15 digits (exact as the
// float64 jsonrpc.ID keeps).
func plainInt(raw []byte) (int64, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// plainString says whether the inside of a JSON string literal holds no
// escape, control character or non-ASCII byte: it is then the string.
func plainString(p []byte) bool {
	for _, c := range p {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// idKey is an id's key in the maps of requests in flight: its type and value.
// Making it allocates nothing for the ids clients send (numbers and
// strings): formatting a number into a string key was a twelfth of what
// termhost allocated per round trip under load (issue 19).
func idKey(id jsonrpc.ID) reqKey {
	switch v := id.Raw().(type) {
	case int64:
		return reqKey{kind: keyInt, n: v}
	case string:
		return reqKey{kind: keyString, s: v}
	}
	return reqKey{kind: keyOther, s: fmt.Sprintf("%T:%v", id.Raw(), id.Raw())}
}

// reqKey is a request id as a map key: a number and a string of the same
// digits are different ids.
type reqKey struct {
	kind uint8
	n    int64
	s    string
}

// The kinds of reqKey; the zero reqKey, noKey, is no request.
const (
	keyInt = 1 + iota
	keyString
	keyOther
)

var noKey reqKey

// inFlight records a request read; it reports false if its id is already
// in flight. subscriptions/listen is not waited for at the end of input:
// it ends only when cancelled.
func (c *stdioConn) inFlight(key reqKey, method string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.pending[key]; dup {
		return false
	}
	if method != "subscriptions/listen" {
		c.pending[key] = nil
	}
	return true
}

func (c *stdioConn) inFlightCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

func (c *stdioConn) answered(key reqKey) {
	keys := [1]reqKey{key}
	c.answeredAll(keys[:])
}

// answeredAll is answered for every key of a batch written, in one lock.
func (c *stdioConn) answeredAll(keys []reqKey) {
	if len(keys) == 0 {
		return
	}
	c.mu.Lock()
	for _, k := range keys {
		delete(c.pending, k)
	}
	empty := len(c.pending) == 0
	c.mu.Unlock()
	if empty {
		c.settle()
	}
}

// answeredCall: the cancelled call d needs no answer. Its id is let go
// only if it is still d's: notifications/cancelled let it go already, and
// the client may have sent a new request with the same id since.
func (c *stdioConn) answeredCall(d *directCall) {
	c.mu.Lock()
	if cur, ok := c.pending[d.key]; ok && cur == d {
		delete(c.pending, d.key)
	}
	empty := len(c.pending) == 0
	c.mu.Unlock()
	if empty {
		c.settle()
	}
}

// settle tells drain the requests in flight may all be answered.
func (c *stdioConn) settle() {
	select {
	case c.settled <- struct{}{}:
	default:
	}
}

// cancelled: a request the client gave up on needs no answer (the server
// may send none), so the end of input does not wait for it; a call on the
// direct path stops.
func (c *stdioConn) cancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
		c.mu.Lock()
		d := c.pending[idKey(id)]
		c.mu.Unlock()
		if d != nil {
			d.cctx.cancel()
		}
		c.answered(idKey(id))
	}
}

// serve runs a tools/call on the direct path, if it can: the session is
// initialized and the tool is known. It answers as go-sdk would (a
// CallToolResult, or a JSON-RPC error), writing the line itself.
func (c *stdioConn) serve(id jsonrpc.ID, params json.RawMessage, call fastCall) bool {
	if c.tools == nil {
		return false
	}
	d := &directCall{c: c, id: id}
	name, args, fast := call.name, call.args, call.ok
	if !fast {
		name, args, fast = fastCallParams(params)
	}
	if fast {
		d.p.Arguments = args
	} else if json.Unmarshal(params, &d.p) != nil {
		return false // go-sdk says what is wrong with it
	} else {
		name = []byte(d.p.Name)
	}
	registered, h, known := c.tools(name)
	if !known {
		return false
	}
	d.p.Name, d.h, d.key = registered, h, idKey(id)
	d.req.Params = &d.p
	d.cctx.notify = c.notify
	d.ctx = &d.cctx
	// One lock: the session is initialized, and the request (in flight
	// since it was read) is this call, for notifications/cancelled.
	c.mu.Lock()
	ready := c.initialized
	if _, inFlight := c.pending[d.key]; ready && inFlight {
		c.pending[d.key] = d
	}
	c.mu.Unlock()
	if !ready {
		return false
	}
	c.run(d)
	return true
}

// directCall is one tools/call on the direct path: its parameters,
// request and context in one allocation, run by a worker.
type directCall struct {
	c    *stdioConn
	id   jsonrpc.ID
	key  reqKey
	h    sdk.ToolHandler
	ctx  context.Context // &cctx
	cctx callCtx
	p    sdk.CallToolParamsRaw
	req  sdk.CallToolRequest
}

// callCtx is a call's context, kept in the call's one allocation: what
// context.WithCancel(context.Background()) and then WithValue(notifierKey,
// where progress goes) would give, without their two allocations, their
// locks and the look-ups up the chain on every Value and cancel (about 2%
// of termhost's CPU in issue 19's concurrent load). Done makes its channel
// on first use; a context derived from it (context.WithTimeout) is told of
// the cancel through AfterFunc, as it is by a cancelCtx, with no goroutine
// of its own.
type callCtx struct {
	notify    notifier
	cancelled atomic.Bool
	mu        sync.Mutex
	done      chan struct{} // made by the first Done
	after     map[*afterCall]struct{}
}

// afterCall is a function AfterFunc runs once the call is cancelled.
type afterCall struct{ f func() }

// closedDone is the Done of a context cancelled before Done was asked.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *callCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.cancelled.Load() {
			return closedDone
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *callCtx) Err() error {
	if c.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

func (c *callCtx) Value(key any) any {
	if _, ok := key.(notifierKey); ok {
		return c.notify
	}
	return nil
}

// AfterFunc runs f in its own goroutine once c is cancelled (at once if it
// is already); stop keeps it from running, and says whether it did (the
// contract of context.AfterFunc, which context.WithCancel and its kin use
// for a parent of a type of their own).
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterCall{f: f}
	c.mu.Lock()
	if c.cancelled.Load() {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.after == nil {
		c.after = make(map[*afterCall]struct{})
	}
	c.after[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, waiting := c.after[a]
		delete(c.after, a)
		return waiting
	}
}

// cancel cancels c: Err says so, Done is closed, and the AfterFunc
// functions start.
func (c *callCtx) cancel() {
	c.mu.Lock()
	if c.cancelled.Load() {
		c.mu.Unlock()
		return
	}
	c.cancelled.Store(true)
	if c.done != nil {
		close(c.done)
	}
	after := c.after
	c.after = nil
	c.mu.Unlock()
	for a := range after {
		go a.f()
	}
}

// serve runs the call and writes its answer.
func (d *directCall) serve() {
	c := d.c
	c.running.Add(1)
	defer c.running.Add(-1)
	defer d.cctx.cancel()
	res, err := d.h(d.ctx, &d.req)
	if d.ctx.Err() != nil {
		c.answeredCall(d) // cancelled: no answer is owed
		return
	}
	buf := getBuf()
	defer putBuf(buf)
	var line []byte
	if err == nil {
		line, err = appendResultLine(*buf, d.id, res)
		*buf = line
	}
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		line, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: d.id, Error: je})
	}
	if err := c.writeLine(line, d.key); err != nil {
		c.log.Warn("answer not written", "err", err)
	}
}

// resultLine is the JSON-RPC line of a successful call, built once, with
// room for its newline. The usual result, one text block and nothing
// else, is written here byte for byte as encoding/json writes it (its
// text escaped once, not marshalled through the SDK's types).
func resultLine(id jsonrpc.ID, res *sdk.CallToolResult) ([]byte, error) {
	return appendResultLine(nil, id, res)
}

// appendResultLine is resultLine appended to dst (a pooled buffer).
func appendResultLine(dst []byte, id jsonrpc.ID, res *sdk.CallToolResult) ([]byte, error) {
	var ridBuf [24]byte
	var rid []byte
	switch v := id.Raw().(type) {
	case int64:
		rid = strconv.AppendInt(ridBuf[:0], v, 10)
	default:
		var err error
		if rid, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	if text, ok := onlyText(res); ok {
		line := slices.Grow(dst[:0], len(text)+len(text)/8+len(rid)+80)
		line = append(line, `{"jsonrpc":"2.0","id":`...)
		line = append(line, rid...)
		line = append(line, `,"result":{"content":[{"type":"text","text":`...)
		line = appendJSONString(line, text)
		return append(line, "}]}}"...), nil
	}
	body, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	line := slices.Grow(dst[:0], len(body)+len(rid)+40)
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, rid...)
	line = append(line, `,"result":`...)
	line = append(line, body...)
	return append(line, '}'), nil
}

// onlyText returns the text of a result that is one text block and
// nothing else (no annotations, meta, structured content or error flag).
func onlyText(res *sdk.CallToolResult) (string, bool) {
	if res == nil || res.IsError || res.Meta != nil || res.StructuredContent != nil || len(res.Content) != 1 ||
		res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() {
		return "", false
	}
	t, ok := res.Content[0].(*sdk.TextContent)
	if !ok || t.Meta != nil || t.Annotations != nil {
		return "", false
	}
	return t.Text, true
}

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it (HTML-safe: <, > and & escaped; U+2028 and U+2029 escaped;
// invalid UTF-8 as U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// run serves d on an idle worker goroutine of the connection, or a new
// one: a worker keeps the stack a call grew, so the next call does not
// grow it again.
func (c *stdioConn) run(d *directCall) {
	select {
	case c.work <- d:
	default:
		go c.worker(d)
	}
}

// worker runs calls until it has been idle a while: from one to two
// minutes. Its timer is not reset after every call (a timer reset per
// call is a lock of the timer heap per call): when it fires, the worker
// goes on if it served a call since the last time.
func (c *stdioConn) worker(d *directCall) {
	idle := time.NewTimer(time.Minute)
	defer idle.Stop()
	served := false
	for {
		if d != nil {
			d.serve()
			served = true
		}
		d = nil
		select {
		case d = <-c.work:
		case <-idle.C:
			if !served {
				return
			}
			served = false
			idle.Reset(time.Minute)
		case <-c.closed:
			return
		}
	}
}

// notifyProgress writes a notifications/progress line.
func (c *stdioConn) notifyProgress(_ context.Context, p *sdk.ProgressNotificationParams) error {
	data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": p})
	if err != nil {
		return err
	}
	return c.writeLine(data, noKey)
}

// drain waits until every request read has been answered, or the
// connection is closed.
func (c *stdioConn) drain() {
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.settled:
		case <-c.closed:
			return
		}
	}
}
