package device

import "testing"

// TestPromptish: the lines a program waits at that run_command takes for
// a prompt, and the ones it does not.
func TestPromptish(t *testing.T) {
	for line, want := range map[string]bool{
		"$ ": true, "# ": true, "user@host:~/src$ ": true, "/tmp # ": true, "bash-5.2# ": true,
		">>> ": true, "... ": true, "sqlite> ": true, "   ...> ": true, "postgres=# ": true,
		"(gdb) ": true, "(Pdb) ": true, "irb(main):001:0> ": true, "127.0.0.1:6379> ": true,
		"edge-r1(config)#": true, "[admin@MikroTik] > ": true, "zebra> ": true,
		"": false, "   ": false, "Password: ": false, "login: ": false, "Username:": false,
		"Downloading 45%": false, "done.": false, "(y/n) ": false, "--More--": false,
		"x" + string(make([]byte, 200)) + "$ ": false,
	} {
		if got := promptish(line); got != want {
			t.Errorf("promptish(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestSameLine: the prompt learned before the send ends a command where
// the output's unfinished last line is that prompt, or ends with it.
func TestSameLine(t *testing.T) {
	for _, c := range []struct {
		line, prompt string
		want         bool
	}{
		{"$ ", "$ ", true},
		{"$", "$ ", true},
		{"no newline$ ", "$ ", true},
		{">>> ", "$ ", false},
		{"$ ", "", false},
		{"new> ", "$ ", false},
	} {
		if got := sameLine(c.line, c.prompt); got != c.want {
			t.Errorf("sameLine(%q, %q) = %v, want %v", c.line, c.prompt, got, c.want)
		}
	}
}

// TestUpToColumn: the cursor's line up to the cursor, in cells, the blank
// a prompt ends with kept.
func TestUpToColumn(t *testing.T) {
	for _, c := range []struct {
		row  string
		col  int
		want string
	}{
		{"$", 2, "$ "},
		{"$ ls", 2, "$ "},
		{"", 0, ""},
		{"日本$", 5, "日本$"},
		{"日本$", 2, "日"},
		{"ab", 5, "ab   "},
	} {
		if got := upToColumn(c.row, c.col); got != c.want {
			t.Errorf("upToColumn(%q, %d) = %q, want %q", c.row, c.col, got, c.want)
		}
	}
}

// TestQuestionLine: a yes/no question stops run_command before it sends.
func TestQuestionLine(t *testing.T) {
	for line, want := range map[string]bool{
		"Do you want to continue? [Y/n] ": true, "Overwrite (y/n)? ": true, "Proceed (yes/no)? ": true,
		"Really? (y or n) ": true, "$ ": false, "(gdb) ": false,
		"Are you sure you want to continue connecting (yes/no/[fingerprint])? ": true,
	} {
		if got := questionLine.MatchString(line); got != want {
			t.Errorf("questionLine(%q) = %v, want %v", line, got, want)
		}
	}
}
