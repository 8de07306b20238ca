package proto

import "strconv"

// Telnet commands (RFC 854; EOR from RFC 885). Each follows an IAC byte.
const (
	EOR  byte = 239 // end of record (prompt mark when the EOR option is used)
	SE   byte = 240 // end of subnegotiation
	NOP  byte = 241 // no operation
	DM   byte = 242 // data mark (Synch)
	BRK  byte = 243 // break
	IP   byte = 244 // interrupt process
	AO   byte = 245 // abort output
	AYT  byte = 246 // are you there
	EC   byte = 247 // erase character
	EL   byte = 248 // erase line
	GA   byte = 249 // go ahead (prompt mark)
	SB   byte = 250 // begin subnegotiation
	WILL byte = 251 // sender wants to / will enable an option on its side
	WONT byte = 252 // sender refuses / disables an option on its side
	DO   byte = 253 // sender asks the receiver to enable an option
	DONT byte = 254 // sender asks the receiver to disable an option
	IAC  byte = 255 // interpret as command
)

// Telnet options.
const (
	BINARY     byte = 0  // RFC 856
	ECHO       byte = 1  // RFC 857
	SGA        byte = 3  // RFC 858 suppress go ahead
	STATUS     byte = 5  // RFC 859
	TM         byte = 6  // RFC 860 timing mark
	TTYPE      byte = 24 // RFC 1091 terminal type
	EOROPT     byte = 25 // RFC 885 end of record
	NAWS       byte = 31 // RFC 1073 window size
	TSPEED     byte = 32 // RFC 1079 terminal speed
	LFLOW      byte = 33 // RFC 1372 remote flow control
	LINEMODE   byte = 34 // RFC 1184
	NEWENVIRON byte = 39 // RFC 1572
)

// Subnegotiation verbs shared by TTYPE, TSPEED and NEW-ENVIRON.
const (
	SubIS   byte = 0
	SubSEND byte = 1
	SubINFO byte = 2
)

// NEW-ENVIRON (RFC 1572) type codes.
const (
	EnvVAR     byte = 0
	EnvVALUE   byte = 1
	EnvESC     byte = 2
	EnvUSERVAR byte = 3
)

// MaxSubneg is the largest subnegotiation payload (after un-doubling IACs,
// excluding the option byte) that Conn buffers and acts upon.
const MaxSubneg = 4096

// Sink receives the output of a Conn. Slices passed to it must not be
// modified. A slice passed to Data during Receive stays valid until Receive
// returns (so a Sink may gather a chunk's data runs and emit them once);
// every other slice is valid only during the call.
//
// A Sink may call Encode, Resize, SendCommand and Request on the Conn from
// inside Event (e.g. to react to an option change), but must never call
// Receive or UnmarshalState re-entrantly.
type Sink interface {
	// Data delivers application data for the user, in order.
	Data(p []byte)
	// Send delivers bytes to write to the peer. Each call is one complete
	// telnet command or sequence and should be written as one write.
	Send(p []byte)
	// Event delivers protocol events, in order relative to Data.
	Event(e Event)
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventOption: an option became enabled or disabled (Option, Local,
	// Enabled).
	EventOption EventKind = iota + 1
	// EventPrompt: the peer sent GA or EOR (Prompt).
	EventPrompt
	// EventCommand: the peer sent another command such as NOP, DM, BRK, IP,
	// AO, AYT, EC, EL or an invalid one (Command).
	EventCommand
	// EventSubneg: a subnegotiation that was not handled (unknown or not
	// enabled option, unsupported verb, or longer than MaxSubneg); Option
	// and Payload.
	EventSubneg
)

// String returns the name of the kind.
func (k EventKind) String() string {
	switch k {
	case EventOption:
		return "option"
	case EventPrompt:
		return "prompt"
	case EventCommand:
		return "command"
	case EventSubneg:
		return "subneg"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// PromptKind tells which prompt mark the peer sent.
type PromptKind uint8

const (
	PromptGA  PromptKind = iota + 1 // IAC GA
	PromptEOR                       // IAC EOR
)

// String returns "GA" or "EOR".
func (k PromptKind) String() string {
	switch k {
	case PromptGA:
		return "GA"
	case PromptEOR:
		return "EOR"
	}
	return "PromptKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is a protocol event.
type Event struct {
	Kind    EventKind
	Option  byte       // EventOption, EventSubneg
	Local   bool       // EventOption: our side (WILL/WONT) rather than the peer's (DO/DONT answers)
	Enabled bool       // EventOption: new state
	Command byte       // EventCommand: the byte after IAC
	Prompt  PromptKind // EventPrompt
	// Payload is the subnegotiation payload for EventSubneg (without the
	// option byte, IAC IAC already undone). Valid only during the call.
	Payload []byte
}

// Config configures a Conn. Zero values select the defaults.
type Config struct {
	Term string // TTYPE answer, default "xterm-256color"
	// ExtraTerms are offered after Term on successive TTYPE SENDs (RFC
	// 1091 cycling: the last one is repeated once, then the list restarts).
	ExtraTerms []string
	Cols, Rows uint16            // NAWS, default 80x24 (each zero one)
	Speed      string            // TSPEED answer, default "38400,38400"
	Env        map[string]string // NEW-ENVIRON answers; empty unless configured
	// DropNOP consumes IAC NOP (a keepalive) without an EventCommand, so
	// that keepalives cost no more than escaped data. It is the host's
	// choice, not part of the state snapshot.
	DropNOP bool
}

var optionNames = [...]string{
	0: "BINARY", 1: "ECHO", 2: "RCP", 3: "SGA", 4: "NAMS", 5: "STATUS",
	6: "TM", 7: "RCTE", 8: "NAOL", 9: "NAOP", 10: "NAOCRD", 11: "NAOHTS",
	12: "NAOHTD", 13: "NAOFFD", 14: "NAOVTS", 15: "NAOVTD", 16: "NAOLFD",
	17: "XASCII", 18: "LOGOUT", 19: "BM", 20: "DET", 21: "SUPDUP",
	22: "SUPDUPOUTPUT", 23: "SNDLOC", 24: "TTYPE", 25: "EOR", 26: "TUID",
	27: "OUTMRK", 28: "TTYLOC", 29: "3270REGIME", 30: "X3PAD", 31: "NAWS",
	32: "TSPEED", 33: "LFLOW", 34: "LINEMODE", 35: "XDISPLOC",
	36: "ENVIRON", 37: "AUTHENTICATION", 38: "ENCRYPT", 39: "NEW-ENVIRON",
	40: "TN3270E", 41: "XAUTH", 42: "CHARSET", 43: "RSP",
	44: "COM-PORT-OPTION", 45: "SLE", 46: "STARTTLS", 47: "KERMIT",
}

// OptionName returns the conventional name of a telnet option, or its
// decimal number if unknown.
func OptionName(opt byte) string {
	if int(opt) < len(optionNames) && optionNames[opt] != "" {
		return optionNames[opt]
	}
	switch opt {
	case 70:
		return "MSSP"
	case 85:
		return "COMPRESS"
	case 86:
		return "COMPRESS2"
	case 201:
		return "GMCP"
	case 255:
		return "EXOPL"
	}
	return strconv.Itoa(int(opt))
}

var commandNames = [...]string{
	"EOR", "SE", "NOP", "DM", "BRK", "IP", "AO", "AYT", "EC", "EL", "GA",
	"SB", "WILL", "WONT", "DO", "DONT", "IAC",
}

// CommandName returns the name of a telnet command byte (239..255), or its
// decimal number.
func CommandName(cmd byte) string {
	if cmd >= EOR {
		return commandNames[cmd-EOR]
	}
	return strconv.Itoa(int(cmd))
}
