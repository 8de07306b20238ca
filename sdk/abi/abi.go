// Package abi holds the numbers of termhost plugin ABI v1: export and import
// names, stream ids, actions, directions and session kinds, and (events.go)
// the typed events plugins emit. Both sides of the
// boundary use it — the guest SDK inside a plugin and the host that runs
// plugins — so the two can never disagree. The ABI itself is described,
// language-neutrally, in sdk/ABI.md.
package abi

// Version is the ABI version this package describes. A plugin declares it by
// exporting a function named VersionExport.
const Version = 1

// Minor is the ABI's minor version: additions a plugin may use that an
// older host does not know (1: typed events with sources, and Channel
// emissions; 2: the Settled action). A plugin's manifest says the minor version it was built for
// ("abiMinor"); a host refuses a plugin that needs a newer one than its
// own, and reads the events of older ones as they are.
const Minor = 2

// Guest exports.
const (
	VersionExport     = "termhost_abi_v1" // () -> (); marker only, never called
	InitializeExport  = "_initialize"     // WASI reactor start-up
	InBufExport       = "in_buf"          // () -> i32 address of the guest-owned input buffer
	InCapExport       = "in_cap"          // () -> i32 capacity of that buffer in bytes
	InGrowExport      = "in_grow"         // optional: (n i32) -> i32 address of a new input buffer of at least n bytes, 0 if refused
	ConfigureExport   = "on_configure"    // (len i32) -> i32 status
	OpenExport        = "on_open"         // (sid i32, kind i32, len i32) -> i32 status
	DataExport        = "on_data"         // (sid i32, dir i32, len i32) -> i32 action
	ControlExport     = "on_control"      // (sid i32, len i32) -> i32 status
	TickExport        = "on_tick"         // (now_ms i64) -> i64 next_ms
	CloseExport       = "on_close"        // (sid i32) -> ()
	StateExportExport = "state_export"    // (sid i32) -> i32 status; optional
	StateImportExport = "state_import"    // (sid i32, len i32) -> i32 status; optional
)

// Host imports, all in module ImportModule.
const (
	ImportModule = "termhost"
	EmitImport   = "emit"   // (sid i32, stream i32, ptr i32, len i32) -> ()
	NowImport    = "now_ms" // () -> i64 milliseconds since the Unix epoch
	CallImport   = "call"   // (sid i32, req_ptr i32, req_len i32, resp_ptr i32, resp_cap i32) -> i32 result
)

// Host calls (import CallImport): a synchronous request from the guest to
// the host, one JSON object with an "op" field; the host writes its answer
// at resp_ptr. The result is the answer's length (>= 0), or one of:
const (
	// CallNoHandler: the host serves no host calls to this session.
	CallNoHandler int32 = -1
	// CallBadRequest: the request is longer than MaxCallRequest or lies
	// outside guest memory.
	CallBadRequest int32 = -2
	// CallTooSmall: the answer is longer than resp_cap; nothing of it was
	// written. When resp_cap >= 4, the size it needs is at resp_ptr (u32,
	// little-endian). The host keeps the answer: a call of the same
	// session with an empty request (req_len 0) collects it, without the
	// host serving the request again; any other call drops it.
	CallTooSmall int32 = -3
	// CallRefused and below: the host refused the request; its reason
	// (UTF-8, cut to resp_cap and to MaxCallReason) is at resp_ptr, and
	// is CallRefused-r bytes long.
	CallRefused int32 = -16
)

// Bounds of host calls.
const (
	MaxCallRequest = 64 << 10 // bytes of one request
	MaxCallAnswer  = 1 << 20  // bytes of one answer; a longer one is refused
	MaxCallReason  = 1 << 10  // bytes of a refusal's reason
)

// ManifestSection is the name of the custom section that carries the plugin's
// manifest (JSON), so the host can list a plugin without running it.
const ManifestSection = "termhost.manifest"

// Stream says where an emission goes.
type Stream uint32

const (
	ToUser Stream = 0 // bytes travelling toward the user (decoded peer output)
	ToPeer Stream = 1 // bytes travelling toward the peer (replies, encoded input)
	Event  Stream = 2 // one JSON object per emission: {"type": "...", ...}
	Log    Stream = 3 // one UTF-8 log line per emission
	State  Stream = 4 // an opaque state snapshot (answer to state_export, or a checkpoint)
	Reply  Stream = 5 // the answer to on_control (JSON)
	// Channel (ABI 1.1): bytes of a numbered side channel (an SSH exec's
	// stdout or stderr), never an event: a ChannelHeader-byte header
	// (channel id u32 little-endian, fd u8) then the bytes.
	Channel Stream = 6
)

func (s Stream) String() string {
	switch s {
	case ToUser:
		return "to_user"
	case ToPeer:
		return "to_peer"
	case Event:
		return "event"
	case Log:
		return "log"
	case State:
		return "state"
	case Reply:
		return "reply"
	case Channel:
		return "channel"
	}
	return "stream?"
}

// Emission is one emit call made by a plugin: bytes (or a JSON event, a log
// line, a state snapshot, a reply) on one stream of one session.
type Emission struct {
	SID    uint32
	Stream Stream
	Data   []byte
}

// Dir is the direction of a chunk given to on_data.
type Dir uint32

const (
	Inbound  Dir = 0 // from the peer, toward the user
	Outbound Dir = 1 // from the user, toward the peer
)

// Action is what on_data returns.
type Action int32

const (
	// Continue: the chunk passes on unchanged in its own direction, after
	// whatever the call emitted. Lets the host skip a copy for plain data.
	Continue Action = 0
	// Consumed: the emissions made during the call are the whole result.
	Consumed Action = 1
	// Close: the plugin asks the host to end the session (after delivering
	// the emissions).
	Close Action = 2
	// Settled: consumed, as Consumed, and the plugin is at rest: text
	// given to it next (see IsText) makes it emit nothing, so the host may
	// hold such bytes back and give them to it later, in order, in one call
	// with what follows, or before any control request or state export.
	// A host older than ABI minor 2 refuses it (and the plugin, built for
	// minor 2, at load). Only a session's
	// screen is held back today (the vt plugin returns it in the ground
	// state); a chain plugin's chunk is never delayed.
	Settled Action = 3
)

// IsText says whether p is text as Settled means it: no C0 control but
// CR, LF, HT and BS (every byte 0x20 and above is text, DEL and UTF-8
// included). Text in a terminal's ground state prints and moves the
// cursor; it never makes a screen answer or emit an event.
func IsText(p []byte) bool {
	for _, c := range p {
		if c < 0x20 && c != '\r' && c != '\n' && c != '\t' && c != '\b' {
			return false
		}
	}
	return true
}

// Status codes returned by on_configure, on_open, on_control, state_export
// and state_import. Any negative value is an error; the plugin should emit a
// log line saying why before returning it.
const (
	OK         int32 = 0
	ErrGeneric int32 = -1
	ErrBadArg  int32 = -2
	ErrNoState int32 = -3 // state export/import not supported
)

// Kind is the kind of session a plugin instance is opened for.
type Kind uint32

const (
	KindTelnet Kind = 1
	KindSSH    Kind = 2
	KindPTY    Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindTelnet:
		return "telnet"
	case KindSSH:
		return "ssh"
	case KindPTY:
		return "pty"
	}
	return "unknown"
}

// Manifest is the JSON document stored in the ManifestSection custom section.
type Manifest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"` // protocol | screen | dialect
	ABI     int    `json:"abi"`
	// ABIMinor is the minor version of the ABI the plugin was built for
	// (Minor when built by sdk/cmd/wasmbuild; absent: 0).
	ABIMinor    int            `json:"abiMinor,omitempty"`
	Description string         `json:"description,omitempty"`
	Options     map[string]any `json:"options,omitempty"`  // JSON Schema of on_configure / on_open options
	Stateful    bool           `json:"stateful,omitempty"` // implements state_export/state_import
	// Failure is what happens to a session when the plugin fails (trap,
	// panic, memory cap, deadline): "open" — the session goes on, on a
	// fresh instance restored from the last checkpoint, or passing chunks
	// through unprocessed; "closed" — the session ends with the error
	// (protocols that hold secrets or ciphers: ciphertext is never passed
	// through). Default: "closed" for kind protocol, "open" otherwise.
	Failure string `json:"failure,omitempty"`
	// Instances is "pooled" (sessions share a small pool of instances, by
	// sid; the default) or "session" (one instance per session, closed
	// with it: for plugins that keep goroutines or large per-connection
	// state).
	Instances string `json:"instances,omitempty"`
	// SessionsPerInstance bounds how many sessions one pooled instance
	// serves (0: no bound). A plugin that keeps much per session (a screen
	// with its scrollback) sets it so an instance stays well inside its
	// memory cap; the pool grows past its usual size to honour it.
	SessionsPerInstance int `json:"sessionsPerInstance,omitempty"`
	// Bounded says every call returns in time bounded by its input (no
	// unbounded loop; fuzzed): the host may then run the plugin without
	// termination checks. termhost honours it only for the plugins
	// embedded in its binary, never for a file from the plugin directory.
	Bounded bool `json:"bounded,omitempty"`
	// Sessions lists the session kinds the plugin handles ("telnet",
	// "ssh", "pty"); empty means all. The host refuses to attach it to
	// another kind, and its canary opens each listed kind.
	Sessions []string `json:"sessions,omitempty"`
}

// FailOpen says whether sessions survive the plugin's failures.
func (m Manifest) FailOpen() bool {
	if m.Failure == "" {
		return m.Kind != "protocol"
	}
	return m.Failure == "open"
}

// PerSession says whether every session gets an instance of its own.
func (m Manifest) PerSession() bool { return m.Instances == "session" }

// Kinds returns the session kinds the plugin handles.
func (m Manifest) Kinds() []Kind {
	if len(m.Sessions) == 0 {
		return []Kind{KindTelnet, KindSSH, KindPTY}
	}
	var ks []Kind
	for _, s := range m.Sessions {
		if k := ParseKind(s); k != 0 {
			ks = append(ks, k)
		}
	}
	return ks
}

// Handles says whether the plugin handles sessions of kind k.
func (m Manifest) Handles(k Kind) bool {
	for _, h := range m.Kinds() {
		if h == k {
			return true
		}
	}
	return false
}

// ParseKind is the Kind named s, or 0.
func ParseKind(s string) Kind {
	for _, k := range []Kind{KindTelnet, KindSSH, KindPTY} {
		if k.String() == s {
			return k
		}
	}
	return 0
}
