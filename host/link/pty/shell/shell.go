// Package shell prepares a program to run under termhost's PTY the way an
// agent needs it (SPEC PTY-4): an environment that never stops for a pager
// or an editor (PAGER=cat, GIT_PAGER=cat, MANPAGER=cat, GIT_EDITOR=true,
// TERM=xterm-256color) unless the caller set those itself, and, for
// interactive bash and zsh, shell integration: OSC 133 marks at prompt
// start (A), prompt end (B), command start (C) and command end with its
// exit code (D;code), which plugins/shell turns into prompt events and
// removes from the stream.
//
// The integration comes from private start-up files in a temporary
// directory that source the user's own (~/.bashrc; zsh's files under the
// user's ZDOTDIR or HOME) and then add hooks around whatever prompt the
// user has; nothing is written into the user's home, no command is
// wrapped, and a private HISTFILE keeps the agent's commands out of the
// user's history.
//
// POSIX shells (sh, dash, ash, BusyBox sh and ash) have no hook around a
// command, only the prompt: their private file is named by ENV, the
// variable an interactive POSIX shell reads at start (the user's own ENV,
// passed as __TERMHOST_ENV, is sourced first and put back for the
// programs the shell starts; a login shell's profile files are sourced
// before it, as the shell would). It wraps PS1 so that each prompt prints
// a status mark carrying $? as the prompt is drawn (S;code), then A, the
// user's prompt, then B. A prompt does not say whether a command ran since
// the last one: plugins/shell tells that from the lines typed (see
// plugins/shell/marks.Typed). Where sh is bash (bash's POSIX mode) the file
// gives it bash's own marks instead. The wrap is made once: a PS1 assigned
// later (typed, or by a program the user sources) has no marks, and the
// session then has prompts only as the screen shows them.
//
// bash with --norc, --noprofile or --posix (or any option but -i, -l and
// --login) gets no integration: the user asked for no start-up code, and
// ours would be start-up code. The same holds for a script or -c.
package shell

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Prepared is how to start the program.
type Prepared struct {
	Command    string
	Args       []string
	Env        []string
	Integrated bool   // the shell prints OSC 133 marks
	Cleanup    func() // removes the private start-up files; never nil
}

// defaults are the agent-safe environment.
var defaults = [][2]string{
	{"PAGER", "cat"}, {"GIT_PAGER", "cat"}, {"MANPAGER", "cat"}, {"GIT_EDITOR", "true"},
	{"TERM", "xterm-256color"},
}

// Prepare decides how to start command with args: env is the environment
// (the server's merged with the caller's), overrides the names the caller
// set explicitly, which win over the defaults.
func Prepare(command string, args []string, env []string, overrides map[string]bool) (Prepared, error) {
	p := Prepared{Command: command, Args: args, Cleanup: func() {}}
	for _, kv := range defaults {
		if !overrides[kv[0]] {
			env = setEnv(env, kv[0], kv[1])
		}
	}
	p.Env = env
	name, lead, rest := kind(command, args)
	if name == "" {
		return p, nil
	}
	login, ok := interactive(rest)
	if !ok {
		return p, nil // a script or -c: no prompt to mark
	}
	dir, err := os.MkdirTemp("", "termhost-shell-")
	if err != nil {
		return p, nil // run it without integration rather than not at all
	}
	p.Cleanup = func() { os.RemoveAll(dir) }
	if !overrides["HISTFILE"] {
		p.Env = setEnv(p.Env, "__TERMHOST_HISTFILE", filepath.Join(dir, "history"))
	}
	switch name {
	case "bash":
		rc := filepath.Join(dir, "bashrc")
		if err := os.WriteFile(rc, []byte(bashRC), 0o600); err != nil {
			p.Cleanup()
			return Prepared{Command: command, Args: args, Env: env, Cleanup: func() {}}, nil
		}
		// --rcfile applies to interactive non-login shells only: a login
		// shell asked for gets its profile files from the rc file.
		p.Args = []string{"--rcfile", rc, "-i"}
		if login {
			p.Env = setEnv(p.Env, "__TERMHOST_LOGIN", "1")
		}
	case "zsh":
		user := getEnv(env, "ZDOTDIR")
		if user == "" {
			user = getEnv(env, "HOME")
		}
		for file, body := range map[string]string{".zshenv": zshEnv, ".zprofile": zshProfile, ".zshrc": zshRC} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o600); err != nil {
				p.Cleanup()
				return Prepared{Command: command, Args: args, Env: env, Cleanup: func() {}}, nil
			}
		}
		p.Env = setEnv(p.Env, "ZDOTDIR", dir)
		p.Env = setEnv(p.Env, "__TERMHOST_ZDOTDIR", user)
		p.Env = setEnv(p.Env, "__TERMHOST_DIR", dir)
		if !slices.Contains(args, "-i") {
			p.Args = append(slices.Clone(args), "-i")
		}
	case "sh":
		rc := filepath.Join(dir, "shrc")
		if err := os.WriteFile(rc, []byte(shRC), 0o600); err != nil {
			p.Cleanup()
			return Prepared{Command: command, Args: args, Env: env, Cleanup: func() {}}, nil
		}
		// The user's ENV goes through a private variable; without one,
		// none is left behind from an enclosing session.
		p.Env = unsetEnv(p.Env, "__TERMHOST_ENV")
		if v, ok := lookupEnv(env, "ENV"); ok {
			p.Env = setEnv(p.Env, "__TERMHOST_ENV", v)
		}
		p.Env = setEnv(p.Env, "ENV", rc)
		// A login shell reads its profile files before ENV, and a profile
		// that sets ENV (as many do) would leave ours unread: the file
		// reads them itself, in the shell's order, and a non-login shell
		// is started.
		p.Env = unsetEnv(p.Env, "__TERMHOST_LOGIN")
		if login {
			p.Env = setEnv(p.Env, "__TERMHOST_LOGIN", "1")
		}
		p.Args = append(slices.Clone(lead), "-i")
	}
	p.Integrated = true
	return p, nil
}

// kind names the shell command with args starts, for the integration:
// "bash", "zsh", "sh" (a POSIX shell: sh, dash, ash, BusyBox sh or ash),
// or "" (none of them). lead is the arguments that choose the shell
// (BusyBox's applet), rest the shell's own.
func kind(command string, args []string) (name string, lead, rest []string) {
	switch base := filepath.Base(command); base {
	case "bash", "zsh":
		return base, nil, args
	case "sh", "dash", "ash":
		return "sh", nil, args
	case "busybox":
		if len(args) > 0 && (args[0] == "sh" || args[0] == "ash") {
			return "sh", args[:1], args[1:]
		}
	}
	return "", nil, nil
}

// interactive says whether args start an interactive shell (no script, no
// -c), and whether a login shell was asked for.
func interactive(args []string) (login, ok bool) {
	for _, a := range args {
		switch a {
		case "-i":
		case "-l", "--login":
			login = true
		default:
			return false, false
		}
	}
	return login, true
}

func setEnv(env []string, k, v string) []string {
	return append(unsetEnv(env, k), k+"="+v)
}

func unsetEnv(env []string, k string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func getEnv(env []string, k string) string {
	v, _ := lookupEnv(env, k)
	return v
}

// lookupEnv is the value of k in env (the last one counts) and whether
// k is set at all (an empty ENV is set).
func lookupEnv(env []string, k string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// bashRC is the private rc file: the user's start-up files first, then the
// marks (C ends with BEL: after "ESC \" in PS0 the next "$" would be taken
// as escaped). $? is taken before the user's PROMPT_COMMAND can change it, and
// PS1 is wrapped after it, so prompts rebuilt every time keep their marks.
const bashRC = `# termhost shell integration (temporary file; sources your own start-up files)
if [ -n "$__TERMHOST_LOGIN" ]; then
  [ -r /etc/profile ] && . /etc/profile
  if [ -r ~/.bash_profile ]; then . ~/.bash_profile
  elif [ -r ~/.bash_login ]; then . ~/.bash_login
  elif [ -r ~/.profile ]; then . ~/.profile; fi
else
  [ -r /etc/bash.bashrc ] && . /etc/bash.bashrc
  [ -r ~/.bashrc ] && . ~/.bashrc
fi
unset __TERMHOST_LOGIN
if [ -n "$__TERMHOST_HISTFILE" ]; then HISTFILE=$__TERMHOST_HISTFILE; fi
unset __TERMHOST_HISTFILE
` + bashHooks

// bashHooks mark bash's prompts: the rc file's, and the ENV file's where
// sh is bash.
const bashHooks = `__termhost_status() {
  local s=$?
  if [ -n "$__termhost_ran" ]; then printf '\033]133;D;%s\033\\' "$s"; fi
  __termhost_ran=
  return $s
}
__termhost_wrap() {
  local s=$?
  case "$PS1" in
    *'133;B'*) ;;
    *) PS1='\[\033]133;A\033\\\]'"$PS1"'\[\033]133;B\033\\\]' ;;
  esac
  return $s
}
PROMPT_COMMAND="__termhost_status${PROMPT_COMMAND:+;$PROMPT_COMMAND}"$'\n'"__termhost_wrap"
PS0='\033]133;C\007${__termhost_none[__termhost_ran=1]}'"$PS0"
`

// shRC is the ENV file of a POSIX shell. It is one compound command, read
// whole before any of it runs, so aliases the user's files define cannot
// change its own commands; "command ." keeps an error in a user's file
// (a syntax error, a failing special built-in) from ending ours. The
// shell is told apart first: bash (sh is bash on some systems) gets
// bash's hooks; BusyBox ash (it sets FUNCNAME) counts the prompt's width
// itself and is given the marks inside \[ \]; dash prints PS1 as
// expanded. ESC and BEL come from printf (dash's PS1 has no \e), and the
// marks end with BEL: a backslash of ESC \ would join the user's prompt
// where BusyBox reads backslash escapes.
const shRC = `# termhost shell integration (temporary file, named by ENV; sources your own ENV file)
{
__termhost_self=${ENV-}
if [ -n "${BASH_VERSION-}" ]; then __termhost_sh=bash
elif [ -n "${FUNCNAME+x}" ]; then __termhost_sh=busybox
else __termhost_sh=sh; fi
__termhost_osc=$(command printf '\033]133;')
__termhost_bel=$(command printf '\007')
if [ -n "${__TERMHOST_LOGIN-}" ]; then
  unset __TERMHOST_LOGIN
  if [ -r /etc/profile ]; then command . /etc/profile; fi
  if [ -r "${HOME-}/.profile" ]; then command . "${HOME-}/.profile"; fi
fi
if [ "${ENV-}" != "$__termhost_self" ]; then
  : # a profile file set ENV: that is the user's
elif [ -n "${__TERMHOST_ENV+x}" ]; then
  ENV=$__TERMHOST_ENV
else
  unset ENV
fi
unset __TERMHOST_ENV __termhost_self
__termhost_f=${ENV-}
case $__termhost_f in
  *'$'* | *'` + "`" + `'*) __termhost_f=$(eval "command printf '%s' \"$__termhost_f\"" 2>/dev/null) || __termhost_f= ;;
esac
case $__termhost_f in
  '' | /*) ;;
  *) __termhost_f=./$__termhost_f ;;
esac
if [ -n "$__termhost_f" ] && [ -r "$__termhost_f" ]; then command . "$__termhost_f"; fi
unset __termhost_f
if [ -n "${__TERMHOST_HISTFILE-}" ]; then HISTFILE=$__TERMHOST_HISTFILE; fi
unset __TERMHOST_HISTFILE
case $__termhost_sh in
bash)
__termhost_ran=
` + bashHooks + `;;
busybox)
  PS1="\\[${__termhost_osc}S;\$?${__termhost_bel}${__termhost_osc}A${__termhost_bel}\\]${PS1-}\\[${__termhost_osc}B${__termhost_bel}\\]" ;;
*)
  PS1="${__termhost_osc}S;\$?${__termhost_bel}${__termhost_osc}A${__termhost_bel}${PS1-}${__termhost_osc}B${__termhost_bel}" ;;
esac
unset __termhost_sh __termhost_osc __termhost_bel
}
`

// zshEnv runs first: the user's .zshenv with their ZDOTDIR, then ours again
// so zsh reads the .zshrc below.
const zshEnv = `# termhost shell integration (temporary file; sources your own start-up files)
ZDOTDIR=$__TERMHOST_ZDOTDIR
[[ -r $ZDOTDIR/.zshenv ]] && . $ZDOTDIR/.zshenv
__termhost_user_zdotdir=$ZDOTDIR
ZDOTDIR=$__TERMHOST_DIR
`

const zshProfile = `ZDOTDIR=$__termhost_user_zdotdir
[[ -r $ZDOTDIR/.zprofile ]] && . $ZDOTDIR/.zprofile
ZDOTDIR=$__TERMHOST_DIR
`

// zshRC: the user's .zshrc, then the hooks. Our precmd runs first (for $?),
// a last one wraps PS1 after themes have rebuilt it. zsh does PROMPT_SP
// (the end-of-line mark and a line of blanks that moves the prompt off a
// line a command left unfinished) before any precmd, so after a command
// that printed no final newline it would land before the D mark, inside
// the command's output: our precmd does it instead, after D, and keeps
// the option off while the user's setting asks for it. The user's ZDOTDIR is
// restored, so .zlogin and later files are theirs.
const zshRC = `ZDOTDIR=$__termhost_user_zdotdir
unset __termhost_user_zdotdir __TERMHOST_ZDOTDIR __TERMHOST_DIR
[[ -r $ZDOTDIR/.zshrc ]] && . $ZDOTDIR/.zshrc
if [[ -n $__TERMHOST_HISTFILE ]]; then HISTFILE=$__TERMHOST_HISTFILE; fi
unset __TERMHOST_HISTFILE
__termhost_precmd() {
  local s=$?
  if [[ -n $__termhost_ran ]]; then printf '\e]133;D;%s\e\\' $s; fi
  __termhost_ran=
  if [[ -n $__termhost_sp ]] && [[ -o prompt_cr ]]; then
    print -Pn -- "${PROMPT_EOL_MARK-%B%S%#%s%b}"
    printf '%*s\r \r' $(( COLUMNS > 1 ? COLUMNS - 1 : 0 )) ''
  fi
  if [[ -o prompt_sp ]]; then __termhost_sp=1; unsetopt prompt_sp; fi
  return $s
}
__termhost_preexec() { __termhost_ran=1; printf '\e]133;C\e\\'; }
__termhost_wrap() {
  [[ $PS1 == *'133;B'* ]] || PS1=$'%{\e]133;A\e\\%}'"$PS1"$'%{\e]133;B\e\\%}'
}
precmd_functions=(__termhost_precmd $precmd_functions __termhost_wrap)
preexec_functions+=(__termhost_preexec)
`
