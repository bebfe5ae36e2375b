#!/bin/bash
# The man pages and --help say the same: every tlsboxd option --help lists
# is in tlsboxd(8) and the other way round (but the internal --generate-dh);
# every tlsboxctl command --help lists is in tlsboxctl(1), with the options
# --help gives it, and each option the man page gives a command whose
# --help line lists its options (not "[OPTIONS]") is on that line.  Before,
# tlsboxd(8) lacked --version, and tlsboxctl(1) lacked bench ceiling
# --detach and policy preview's options.
. "$(dirname "$0")/lib.sh"
tb_setup

"$TB_TLSBOXD" --help >"$TB_TMP/tlsboxd.help" 2>&1
ok $? "tlsboxd --help"
"$TB_TLSBOXCTL" --help >"$TB_TMP/tlsboxctl.help" 2>&1
ok $? "tlsboxctl --help"

# compare.py HELP MAN KIND: one "ok"/"not ok: WHY" line per check.
cat >"$TB_TMP/compare.py" <<'PY'
import re, sys
helptext, man, kind = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
# Roff to text: font escapes out, \- is -.
man = re.sub(r'\\f[BIRP]', '', man).replace('\\-', '-')
opts = lambda s: set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b', s))
bad = []
if kind == 'tlsboxd':
    h = opts(helptext)
    m = opts(man) - {'--generate-dh'}
    bad += ['--help lists %s, tlsboxd(8) does not' % o for o in sorted(h - m)]
    bad += ['tlsboxd(8) lists %s, --help does not' % o for o in sorted(m - h - {'--help'})]
else:
    # Man page command entries: the line after each .TP in COMMANDS, split
    # at " | " into "name sub ..." segments (a segment without the name
    # continues the last name).
    cmds = man.split('.SH COMMANDS', 1)[1].split('.SH EXIT', 1)[0]
    heads = re.findall(r'^\.TP\n\.BI? ([^\n]*)', cmds, re.M)

    def parts(h):  # split at " | " outside brackets
        out, depth, cur, i = [], 0, '', 0
        while i < len(h):
            depth += h[i] == '['
            depth -= h[i] == ']'
            if depth == 0 and h.startswith(' | ', i):
                out.append(cur)
                cur, i = '', i + 3
                continue
            cur += h[i]
            i += 1
        return out + [cur]

    segs = {}
    for h in heads:
        h = h.replace('"', '')
        name = h.split()[0]
        for part in parts(h):
            words = part.split()
            if words and words[0] != name:
                words = [name] + words
            if len(words) > 1 and not words[1].startswith(('-', '[')) and words[1].islower() \
                    and not words[1].isupper():
                key = (words[0], words[1])
            else:
                key = (words[0], None)
            segs.setdefault(key, set()).update(opts(' '.join(words)))
    for line in helptext.split('commands:', 1)[1].split('\n\n', 1)[0].strip('\n').split('\n'):
        words = line.split()
        name = words[0]
        sub = words[1] if len(words) > 1 and (name, words[1]) in segs else None
        key = (name, sub)
        if key not in segs:
            bad.append('tlsboxctl(1) has no entry for "%s"' % ' '.join(w for w in key if w))
            continue
        usage = line.split('   ')[0] if '   ' in line else line
        h = opts(usage)
        missing = h - segs[key]
        bad += ['--help gives "%s" %s, tlsboxctl(1) does not' % (' '.join(w for w in key if w), o)
                for o in sorted(missing)]
        if '[OPTIONS]' not in usage:
            extra = segs[key] - h
            bad += ['tlsboxctl(1) gives "%s" %s, its --help line does not' %
                    (' '.join(w for w in key if w), o) for o in sorted(extra)]
print('\n'.join(bad) if bad else 'same')
PY

out=$(python3 "$TB_TMP/compare.py" "$TB_TMP/tlsboxd.help" "$top_srcdir/doc/tlsboxd.8" tlsboxd)
is "$out" same "tlsboxd --help and tlsboxd(8) list the same options"
out=$(python3 "$TB_TMP/compare.py" "$TB_TMP/tlsboxctl.help" "$top_srcdir/doc/tlsboxctl.1" tlsboxctl)
is "$out" same "tlsboxctl --help and tlsboxctl(1) give each command the same options"

done_testing
