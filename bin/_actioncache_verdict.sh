# Not a command: sourced by bin/_actioncache_direct.sh's _ac_direct (POSIX sh) once a direct verdict
# may exist for the command's name: the checks of a verdict against this invocation, and its journal
# line. Apart so that the shell part of every other `actioncache exec` (a hit, a miss) does not parse
# them. Every variable here is one _ac_direct's first line checks (tests/runs/test_launcher.py).

_ac_fields() {  # /proc/self/stat after "comm) ": $1 is field 3
  _ac_nice=${17} _ac_start=${20} _ac_sigign=${31} _ac_rtprio=${38} _ac_policy=${39}
}

_ac_state() {  # what the command inherits besides the environment, as runs.keys.process_state keys it
  while IFS= read -r _ac_l; do
    case $_ac_l in
      Umask*|TracerPid*|Uid*|Gid*|Groups*|SigBlk*|SigIgn*|Cap*|NoNewPrivs*|Seccomp*|Cpus_allowed_list*|\
      Mems_allowed_list*) printf '%s\n' "$_ac_l" ;;
      voluntary_ctxt*) break ;;
    esac
  done < "/proc/$$/status"
  for _ac_l in "/proc/$$/oom_score_adj" /proc/sys/kernel/hostname /proc/sys/kernel/osrelease; do
    IFS= read -r _ac_l < "$_ac_l" && printf '%s\n' "$_ac_l"
  done
  printf 'nice %s policy %s %s\n' "$_ac_nice" "$_ac_policy" "$_ac_rtprio"
}

_ac_num() {  # whether every argument is a decimal number (of at most 18 digits: no overflow)
  for _ac_l; do case $_ac_l in ''|*[!0-9]*|???????????????????*) return 1 ;; esac; done
}

_ac_stdio() {  # $1: t|n (stdin a terminal, /dev/null); $2: 1|2 (stdout and stderr one stream or two)
  case $1 in
    t) [ -t 0 ] || return 1 ;;
    n) ! [ -t 0 ] && [ /dev/stdin -ef /dev/null ] || return 1 ;;
    *) return 1 ;;
  esac
  for _ac_l in /dev/stdout /dev/stderr; do
    [ -e "$_ac_l" ] || return 1  # closed
    if [ -c "$_ac_l" ] && ! [ "$_ac_l" -ef /dev/null ]; then
      case $_ac_l in /dev/stdout) [ -t 1 ] ;; *) [ -t 2 ] ;; esac || return 1  # a device other than a terminal
    fi
  done
  case $2 in
    1) [ /dev/stdout -ef /dev/stderr ] ;;  # (one regular file: two opens of it too; running directly is right either way)
    2) ! [ /dev/stdout -ef /dev/stderr ] ;;
    *) return 1 ;;
  esac
}

_ac_fds() {  # no regular file inherited above 2 (Python keys those), but this script and its source
  for _ac_l in /proc/self/fd/*; do
    case ${_ac_l##*/} in 0|1|2) continue ;; esac
    if [ -f "$_ac_l" ] && ! [ "$_ac_l" -ef "$_ac_me" ] && ! [ "$_ac_l" -ef "$_ac_src" ]; then return 1; fi
  done
}

_ac_check() {  # $1: a verdict file; 0: it holds for this invocation (its lines: runs/direct.py)
  IFS= read -r _ac_boot < /proc/sys/kernel/random/boot_id || return 1
  IFS=' ' read -r _ac_up _ac_l < /proc/uptime || return 1
  _ac_up=${_ac_up%.*}${_ac_up#*.}  # centiseconds
  _ac_num "$_ac_up" || return 1
  _ac_seen= _ac_jnl= _ac_rec= _ac_hz= _ac_t0= _ac_io= _ac_msg=
  while IFS= read -r _ac_l; do
    _ac_a=${_ac_l#??}
    case $_ac_l in
      "v 1") _ac_seen=v ;;
      "b $_ac_boot") _ac_seen=${_ac_seen}b ;;
      "u "*) _ac_num "$_ac_a" && [ "$_ac_up" -lt "$_ac_a" ] || return 1; _ac_seen=${_ac_seen}u ;;
      "c "*) [ "$_ac_a" = "$_ac_at" ] || return 1; _ac_seen=${_ac_seen}c ;;
      "s "*) _ac_io=$_ac_a; _ac_seen=${_ac_seen}s ;;  # checked below: stdin is this file here
      "f /"*) [ -e "$_ac_a" ] || return 1 ;;
      "e /"*) [ -e "$_ac_a" ] && ! [ "$_ac_a" -nt "$1" ] || return 1 ;;
      "a /"*) ! [ -e "$_ac_a" ] && ! [ -L "$_ac_a" ] || return 1 ;;
      "x /"*) ! [ -x "$_ac_a" ] || [ -d "$_ac_a" ] || return 1 ;;
      "X /"*) [ -x "$_ac_a" ] && ! [ -d "$_ac_a" ] && ! [ "$_ac_a" -nt "$1" ] || return 1 ;;
      "j /"*-exec-hits.jsonl) _ac_jnl=$_ac_a ;;  # only a hit journal, and a line no shell would run:
      "r {"*) case $_ac_a in *[!A-Za-z0-9\ _.:,\"{}/+@=%~-]*) ;; *) _ac_rec=$_ac_a ;; esac ;;
      "m "*) case $_ac_a in *[!A-Za-z0-9\ _.:,\(\)\;-]*) return 1 ;; *) _ac_msg=$_ac_a ;; esac ;;  # --summary's line
      "k "*) _ac_num "$_ac_a" && [ "$_ac_a" -gt 0 ] && _ac_hz=$_ac_a ;;
      "t "*) _ac_num "$_ac_a" && _ac_t0=$_ac_a ;;
      "end") _ac_seen=${_ac_seen}. ; break ;;
      *) return 1 ;;
    esac
  done < "$1"
  case $_ac_io in [tn]\ [12]) ;; *) return 1 ;; esac
  [ "$_ac_seen" = vbucs. ] && _ac_stdio $_ac_io  # (no "end": torn or planted)
}

_ac_journal() {  # one line in the store's hit journal, as the hit path writes it (runs.hitpath._cheap)
  [ -n "$_ac_jnl" ] && [ -n "$_ac_rec" ] && [ -n "$_ac_hz" ] && [ -n "$_ac_t0" ] && _ac_num "$_ac_start" || return 0
  IFS=' ' read -r _ac_up _ac_l < /proc/uptime || return 0
  _ac_up=${_ac_up%.*}${_ac_up#*.}
  _ac_num "$_ac_up" || return 0
  # what this process cost before the command starts: /proc's clocks tick every 10 ms, so does this figure
  _ac_ms=$((_ac_up * 10 - _ac_start * 1000 / _ac_hz))
  [ "$_ac_ms" -ge 0 ] || _ac_ms=0
  _ac_cs=$((_ac_t0 + _ac_up))  # now, in centiseconds since the epoch
  _ac_s=$((_ac_cs / 100))
  _ac_z=$((_ac_s / 86400 + 719468))  # civil_from_days (H. Hinnant), for the run log's UTC timestamps
  _ac_doe=$((_ac_z % 146097))
  _ac_yoe=$(((_ac_doe - _ac_doe / 1460 + _ac_doe / 36524 - _ac_doe / 146096) / 365))
  _ac_doy=$((_ac_doe - (365 * _ac_yoe + _ac_yoe / 4 - _ac_yoe / 100)))
  _ac_mp=$(((5 * _ac_doy + 2) / 153))
  _ac_d=$((_ac_doy - (153 * _ac_mp + 2) / 5 + 1))
  _ac_m=$((_ac_mp < 10 ? _ac_mp + 3 : _ac_mp - 9))
  _ac_y=$((_ac_z / 146097 * 400 + _ac_yoe + (_ac_m <= 2)))
  _ac_l=$((_ac_s % 86400))
  if [ -L "$_ac_jnl" ]; then
    :  # never append through a symbolic link planted in the journal's place (the hit path opens it O_NOFOLLOW)
  elif [ -e "$_ac_jnl" ]; then
    _ac_line >> "$_ac_jnl"
  else
    (umask 077 && _ac_line >> "$_ac_jnl")  # made as the hit path makes it (0600)
  fi 2>/dev/null
}

_ac_line() {  # one printf: one write, and appends never interleave
  printf '%s, "overhead_ms": %d, "sh": true, "at": "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ"}\n' "$_ac_rec" "$_ac_ms" \
    "$_ac_y" "$_ac_m" "$_ac_d" $((_ac_l / 3600)) $((_ac_l / 60 % 60)) $((_ac_l % 60)) $((_ac_cs % 100 * 10000))
}
