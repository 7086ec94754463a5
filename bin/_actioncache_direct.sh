# Not a command: sourced by bin/actioncache (POSIX sh, /bin/sh is often dash) for `actioncache exec`,
# before it starts Python. A command judged *cheap* (faster fresh than a hit: runs/cost.py) is run
# directly here, without a Python start-up, when the Python side left a *direct verdict* for exactly
# this invocation (runs/direct.py writes it, documented there and in docs/agent-loops.md). Running a
# command directly is always correct (never a wrong hit, at most an uncached run), so this part
# only has to never run directly where the Python hit path would not, and to expire as its cheap
# verdict does. Anything it cannot check with builtins falls through to Python, as before.
#
# Builtins only, but for one process: sha256sum of this invocation (working directory, argv, the
# exported environment, the inherited process state; its own /proc/self/limits are ours). Every name here starts with _ac_ and none is
# exported but _ACTIONCACHE_DIRECT (the name, for the Python side, which removes it at once). No name set
# here can reach the command changed: when the caller exports one of them, _ac_direct saves the caller's
# variables (as bin/actioncache does for its own names) and bin/actioncache gives them back before any exec.

_ac_parse() {  # the number of arguments of `exec` before the command (as runs.hitpath._parse); 1: not plain
  shift  # exec
  _ac_at=0
  while [ $# -gt 0 ]; do
    case $1 in
      --) [ $# -ge 2 ] || return 1; _ac_tool=${2##*/}; _ac_at=$((_ac_at + 1)); return 0 ;;
      --mode=*|--cache-mode=*|--scope=*|--scopes=*|--cache-scope=*|--phase=*|--input=*|--env=*|--store=*|\
      --max-age-hours=*|--env-ignore=*) shift; _ac_at=$((_ac_at + 1)) ;;
      --mode|--cache-mode|--scope|--scopes|--cache-scope|--phase|--input|--env|--store|--max-age-hours|\
      --env-ignore) [ $# -ge 2 ] || return 1; shift 2; _ac_at=$((_ac_at + 2)) ;;
      --summary) shift; _ac_at=$((_ac_at + 1)) ;;  # the verdict carries the line to print (m)
      *) return 1 ;;  # --explain, help, a typo: Python
    esac
  done
  return 1
}

_ac_direct() {  # "$@": the whole command line; returns only when Python takes over
  # A caller's exported variable named like one this file sets keeps its export flag: save the caller's
  # variables (bin/actioncache puts them back before any exec) unless bin/actioncache did for its names.
  [ -z "${_ac_a+x}${_ac_boot+x}${_ac_cs+x}${_ac_d+x}${_ac_doe+x}${_ac_doy+x}${_ac_h+x}${_ac_hz+x}${_ac_io+x}${_ac_jnl+x}${_ac_l+x}${_ac_m+x}${_ac_mp+x}${_ac_ms+x}${_ac_msg+x}${_ac_nice+x}${_ac_policy+x}${_ac_rec+x}${_ac_root+x}${_ac_rtprio+x}${_ac_s+x}${_ac_seen+x}${_ac_sigign+x}${_ac_start+x}${_ac_t0+x}${_ac_tool+x}${_ac_up+x}${_ac_y+x}${_ac_yoe+x}${_ac_z+x}" ] || [ -n "$_ac_env" ] || _ac_env=$(export -p)
  _ac_parse "$@" || return 0
  case $_ac_tool in ''|.|..) return 0 ;; esac
  _ac_root=${XDG_CACHE_HOME:-${HOME-}/.cache}
  case $_ac_root in /?*) ;; *) return 0 ;; esac
  [ -n "${XDG_CACHE_HOME:-${HOME-}}" ] || return 0
  _ac_root=$_ac_root/actioncache/exec-direct
  [ -d "$_ac_root/$_ac_tool" ] || return 0  # no cheap command of this name: no hashing
  [ -r "${_ac_src%/*}/_actioncache_verdict.sh" ] || return 0
  . "${_ac_src%/*}/_actioncache_verdict.sh"  # the checks below, parsed only now
  IFS= read -r _ac_l < /proc/self/stat || return 0
  _ac_fields ${_ac_l##*) }
  # SIGPIPE or SIGXFSZ ignored: Python gives the command them back at their default, which no shell can
  _ac_num "$_ac_sigign" && [ $((_ac_sigign & 16781312)) -eq 0 ] || return 0
  _ac_h=$( {
    unset SHLVL OLDPWD _ TERM_SESSION_ID ITERM_SESSION_ID WINDOWID KITTY_WINDOW_ID WEZTERM_PANE TMUX_PANE STY WINDOW \
      XDG_SESSION_ID SSH_AUTH_SOCK SSH_AGENT_PID SSH_CLIENT SSH_CONNECTION SSH_TTY GPG_TTY  # (runs.keys.ENV_IGNORE)
    printf 'actioncache direct 1\n'; pwd -P; printf '%s\0' "$@"; printf '\n'; export -p; _ac_state
  } 2>/dev/null | sha256sum - /proc/self/limits 2>/dev/null)  # (its limits are ours: inherited as they are)
  _ac_l=${_ac_h#*"
"}
  _ac_h=${_ac_h%% *}${_ac_l%% *}
  case $_ac_h in *[!0-9a-f]*|'') return 0 ;; esac
  [ ${#_ac_h} -eq 128 ] || return 0
  if [ -f "$_ac_root/$_ac_tool/$_ac_h" ] && _ac_fds && _ac_check "$_ac_root/$_ac_tool/$_ac_h"; then
    _ac_journal
    [ -z "$_ac_msg" ] || printf '%s\n' "$_ac_msg" >&2  # --summary's line, as the hit path prints it
    _ac_run=1  # the caller runs the command
    return 0
  fi
  _ACTIONCACHE_DIRECT=$_ac_root/$_ac_tool/$_ac_h
  export _ACTIONCACHE_DIRECT  # the Python side writes the verdict here if it runs the command directly
}
