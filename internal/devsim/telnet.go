package devsim

import "strconv"

// Telnet command bytes (RFC 854, RFC 885 for EOR).
const (
	cmdEOR  byte = 239
	cmdSE   byte = 240
	cmdNOP  byte = 241
	cmdDM   byte = 242
	cmdBRK  byte = 243
	cmdIP   byte = 244
	cmdAO   byte = 245
	cmdAYT  byte = 246
	cmdEC   byte = 247
	cmdEL   byte = 248
	cmdGA   byte = 249
	cmdSB   byte = 250
	cmdWILL byte = 251
	cmdWONT byte = 252
	cmdDO   byte = 253
	cmdDONT byte = 254
	cmdIAC  byte = 255
)

// Telnet option codes.
const (
	optBinary     byte = 0
	optEcho       byte = 1
	optSGA        byte = 3
	optStatus     byte = 5
	optTimingMark byte = 6
	optTTYPE      byte = 24
	optEOR        byte = 25
	optNAWS       byte = 31
	optTSPEED     byte = 32
	optLFLOW      byte = 33
	optLinemode   byte = 34
	optXDISPLOC   byte = 35
	optOldEnviron byte = 36
	optNewEnviron byte = 39
	optCharset    byte = 42
)

// Subnegotiation verbs (TTYPE, NEW-ENVIRON) and NEW-ENVIRON type codes.
const (
	sbIS   byte = 0
	sbSEND byte = 1
	sbINFO byte = 2

	envVAR     byte = 0
	envVALUE   byte = 1
	envESC     byte = 2
	envUSERVAR byte = 3
)

// maxSB bounds the size of one subnegotiation we are willing to buffer.
const maxSB = 4096

var optNames = map[byte]string{
	optBinary:     "BINARY",
	optEcho:       "ECHO",
	optSGA:        "SGA",
	optStatus:     "STATUS",
	optTimingMark: "TIMING-MARK",
	optTTYPE:      "TTYPE",
	optEOR:        "EOR",
	optNAWS:       "NAWS",
	optTSPEED:     "TSPEED",
	optLFLOW:      "LFLOW",
	optLinemode:   "LINEMODE",
	optXDISPLOC:   "XDISPLOC",
	optOldEnviron: "OLD-ENVIRON",
	optNewEnviron: "NEW-ENVIRON",
	optCharset:    "CHARSET",
}

// OptionName returns the conventional name of a telnet option ("ECHO",
// "NAWS", ...) or its decimal code for options it does not know.
func OptionName(opt byte) string {
	if n, ok := optNames[opt]; ok {
		return n
	}
	return strconv.Itoa(int(opt))
}

// sink receives what the decoder finds in the byte stream, in order.
type sink interface {
	// data gets one application byte after NVT processing: IAC IAC is
	// 0xFF, CR LF and CR NUL arrive as a single '\r', a lone LF as '\n'.
	data(b byte)
	// command gets a two-byte IAC command (IP, AYT, BRK, NOP, GA, ...).
	command(cmd byte)
	// negotiate gets WILL/WONT/DO/DONT with its option.
	negotiate(verb, opt byte)
	// subneg gets a complete subnegotiation with IAC IAC already undone.
	// The slice is only valid during the call.
	subneg(opt byte, data []byte)
}

type decState uint8

const (
	stData decState = iota
	stIAC
	stOpt   // after WILL/WONT/DO/DONT, waiting for the option byte
	stSBOpt // after IAC SB, waiting for the option byte
	stSB    // inside a subnegotiation
	stSBIAC // IAC seen inside a subnegotiation
)

// decoder is the server side telnet stream decoder. All of its state lives
// in the struct, so a stream can be fed in arbitrary pieces (an IAC at the
// end of one read and its command byte at the start of the next, a
// subnegotiation spread over many reads, CR and its LF in different
// reads) and the sink sees exactly the same calls as for one big read.
type decoder struct {
	state    decState
	verb     byte
	sawCR    bool
	sbOpt    byte
	sb       []byte
	overflow bool
}

func (d *decoder) feed(p []byte, s sink) {
	for _, b := range p {
		d.step(b, s)
	}
}

func (d *decoder) step(b byte, s sink) {
	switch d.state {
	case stData:
		if b == cmdIAC {
			d.state = stIAC
			return
		}
		d.dataByte(b, s)
	case stIAC:
		d.state = stData
		switch b {
		case cmdIAC:
			d.dataByte(cmdIAC, s)
		case cmdWILL, cmdWONT, cmdDO, cmdDONT:
			d.verb = b
			d.state = stOpt
		case cmdSB:
			d.state = stSBOpt
		case cmdSE:
			// Stray SE outside a subnegotiation: ignore.
		default:
			s.command(b)
		}
	case stOpt:
		d.state = stData
		s.negotiate(d.verb, b)
	case stSBOpt:
		d.sbOpt = b
		d.sb = d.sb[:0]
		d.overflow = false
		d.state = stSB
	case stSB:
		if b == cmdIAC {
			d.state = stSBIAC
			return
		}
		d.sbByte(b)
	case stSBIAC:
		switch b {
		case cmdIAC:
			d.sbByte(cmdIAC)
			d.state = stSB
		case cmdSE:
			d.state = stData
			d.endSB(s)
		default:
			// Malformed: IAC <cmd> inside SB. Like BSD telnetd, end the
			// subnegotiation here and treat the byte as a command.
			d.endSB(s)
			d.state = stIAC
			d.step(b, s)
		}
	}
}

func (d *decoder) dataByte(b byte, s sink) {
	if d.sawCR {
		d.sawCR = false
		if b == '\n' || b == 0 {
			return // CR LF and CR NUL are one end of line / one CR
		}
	}
	if b == '\r' {
		d.sawCR = true
	}
	s.data(b)
}

func (d *decoder) sbByte(b byte) {
	if len(d.sb) >= maxSB {
		d.overflow = true
		return
	}
	d.sb = append(d.sb, b)
}

func (d *decoder) endSB(s sink) {
	if d.overflow {
		d.sb = d.sb[:0]
		return
	}
	s.subneg(d.sbOpt, d.sb)
	d.sb = d.sb[:0]
}

// parseEnviron decodes the body of a NEW-ENVIRON IS or INFO
// subnegotiation (after the IS/INFO byte) into name/value pairs.
// USERVAR names are returned as-is; a VAR without VALUE maps to "".
func parseEnviron(p []byte, into map[string]string) {
	var name, val []byte
	inName, have := false, false
	flush := func() {
		if have && len(name) > 0 {
			into[string(name)] = string(val)
		}
		name, val = name[:0], val[:0]
		have = false
	}
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch b {
		case envVAR, envUSERVAR:
			flush()
			inName, have = true, true
		case envVALUE:
			inName = false
		case envESC:
			if i+1 < len(p) {
				i++
				b = p[i]
			}
			fallthrough
		default:
			if !have {
				continue
			}
			if inName {
				name = append(name, b)
			} else {
				val = append(val, b)
			}
		}
	}
	flush()
}

// escapeIAC appends p to dst with every 0xFF doubled.
func escapeIAC(dst, p []byte) []byte {
	for _, b := range p {
		if b == cmdIAC {
			dst = append(dst, cmdIAC)
		}
		dst = append(dst, b)
	}
	return dst
}
