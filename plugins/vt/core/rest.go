package core

// AtRest says whether the parser is in its ground state: no escape
// sequence, control string or OSC is under way, so text written next
// (printable bytes, UTF-8, CR, LF, HT, BS) only prints and moves the
// cursor — it cannot end a query or a title, and the terminal answers
// nothing for it. The plugin tells the host so (abi.Settled), and the host
// may then give it such text late, in one call with what follows.
func (t *Terminal) AtRest() bool { return t.p.st == psGround }
