// Package proto is a sans-IO Telnet client protocol core (RFC 854, RFC 855)
// with RFC 1143 option negotiation.
//
// # What it is
//
// The package never touches a socket, a clock or a goroutine. A [Conn] is a
// plain state machine: the host feeds it whatever bytes arrived from the peer
// with [Conn.Receive], and the Conn reports what they mean through a [Sink]:
//
//   - Sink.Data gets the application bytes (telnet escapes removed), in order;
//   - Sink.Send gets the bytes that must be written back to the peer
//     (negotiation replies, subnegotiation answers), one call per complete
//     telnet command, so a host that turns each Send into one write never
//     interleaves half a command with anything else;
//   - Sink.Event gets protocol events (option changes, GA/EOR prompt marks,
//     other commands, unhandled subnegotiations), ordered relative to Data.
//
// User input goes the other way through [Conn.Encode] (IAC doubling, CR NUL
// stuffing), and the host can ask for options itself with [Conn.Request],
// report a new window size with [Conn.Resize] or send IP/AYT/BRK with
// [Conn.SendCommand]. This is the shape of libtelnet or alacritty's vte
// parser, and it is why the same code runs natively and as GOOS=wasip1
// GOARCH=wasm: the host owns all I/O.
//
// # Split safety
//
// TCP delivers a byte stream, not messages, so a telnet command can arrive
// cut anywhere: between IAC and the command byte, between DO and its option,
// in the middle of a subnegotiation, between IAC and SE, or between a CR and
// the NUL that follows it. A Conn keeps all of that partial state between
// calls, so feeding a stream in one piece or in any number of pieces yields
// the same concatenated Data, the same Send calls and the same Events in the
// same order. The complete state (including a half-received subnegotiation)
// can be saved with [Conn.MarshalState] and restored into another Conn with
// [Conn.UnmarshalState], e.g. to move a session between wasm instances.
//
// Plain text is fast: Receive looks for the first IAC or (outside BINARY
// mode) CR NUL in one pass and hands the data before it to Data as a
// sub-slice of the input. When a chunk contains nothing to rewrite, Receive
// passes the chunk itself to Data in one call and returns plain == true,
// letting an adapter skip a copy. Escaped data is fast too: from the first
// IAC IAC or CR NUL of a chunk on, Receive unescapes the rest of the chunk's
// data into a buffer of its own, 64 bytes at a time without a branch (a
// wasm host's termination checks charge for branches, not for bytes; see
// unescape.go), and calls Data once per stretch between two commands.
// Nothing is allocated per byte; the few internal buffers are reused.
//
// # Option negotiation: the Q method
//
// Telnet options are switched with WILL/WONT (the sender's side) and DO/DONT
// (the receiver's side). Naive implementations that acknowledge every
// command loop forever when two of them disagree or requests cross on the
// wire. RFC 1143 fixes this with four states per option and side,
//
//	NO, YES, WANTNO, WANTYES
//
// plus a one-bit queue ("OPPOSITE") remembering that the user changed their
// mind while a request was in flight. The rules that matter:
//
//   - a command that confirms the current state (DO for an option that is
//     already on, WONT for one that is already off, ...) is never answered;
//   - a request for an option in state NO is answered exactly once: agree
//     (state YES) or refuse (state stays NO);
//   - an answer to our own pending request (state WANT*) is not answered
//     again, it only settles the state (and, if the queue bit is set, starts
//     the queued opposite request);
//   - each received command produces at most one negotiation reply.
//
// Conn keeps these states for all 256 options on both sides: "us" (our
// WILL/WONT, answered to the peer's DO/DONT; Event.Local == true) and "him"
// (the peer's WILL/WONT, answered with our DO/DONT; Event.Local == false).
// An option is enabled only in state YES, and every change of that bit is
// reported with an EventOption.
//
// Policy: the peer may enable ECHO, SGA, BINARY and EOR on its side; we
// offer TTYPE, NAWS, TSPEED, NEW-ENVIRON, BINARY and SGA on ours. Everything
// else is refused (DONT / WONT). Request lets the host ask for any option.
//
// # Edge cases and choices
//
//   - IAC IAC is a data byte 0xFF, in data and inside subnegotiations.
//   - Inside a subnegotiation, IAC followed by a byte other than SE or IAC is
//     a protocol error. Like libtelnet, the subnegotiation is considered
//     finished (and processed), and the byte is then processed as the
//     command following an IAC (so "IAC SB TTYPE SEND IAC GA" answers the
//     TTYPE SEND and then reports a GA prompt).
//   - Subnegotiation payloads are limited to [MaxSubneg] bytes; a longer one
//     is consumed to its IAC SE, not acted upon, and reported as EventSubneg
//     with the first MaxSubneg bytes.
//   - Subnegotiations are answered only for options enabled on our side (a
//     TTYPE SEND before we agreed to TTYPE is reported as EventSubneg).
//   - CR NUL becomes CR; CR LF is passed through unchanged; a CR followed by
//     anything else (a protocol violation) is passed through and the next
//     byte is processed normally (an IAC after a CR is still a command).
//     While the peer's BINARY option is enabled there is no CR handling.
//   - GA and EOR are reported as EventPrompt; IAC followed by any other
//     byte that is not a negotiation verb, SB or IAC (NOP, DM, BRK, IP, AO,
//     AYT, EC, EL, a stray SE, or an invalid byte below 239) is reported as
//     EventCommand with the byte in Event.Command, except NOP when
//     Config.DropNOP is set. DM is not treated as a Synch (there is no TCP
//     urgent data in a sans-IO core).
//   - GA and EOR are reported whether or not SGA / the EOR option were
//     negotiated.
//   - DO TIMING-MARK is refused like any unsupported option (WONT TM).
package proto
