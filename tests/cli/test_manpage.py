#!/usr/bin/env python3
# The manual page documents every command and option --help shows; the shell completions are
# generated from the same definition and work; `cmake --install` installs binary, page and completions.
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from clitest import MEMSNAP, check, finish, run, skip

MANPAGE, BUILD, CMAKE = sys.argv[3], sys.argv[4], sys.argv[5]


def help_commands():
    rc, out, err = run(["--help"])
    section = out.split("Subcommands:", 1)[1] if "Subcommands:" in out else ""
    return [m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*)\s", section, re.M)]


def help_options(args):
    rc, out, err = run(args + ["--help"])
    names = set()
    for line in out.splitlines():
        m = re.match(r"^  ((?:-[\w-]+,)*-[\w-]+)", line)  # "  -o,--output OUT  ..."
        if m:
            names.update(m.group(1).split(","))
    return names


with open(MANPAGE, encoding="utf-8") as f:
    man = f.read()
# The page as text: \- is a hyphen, font changes vanish.
text = re.sub(r"\\f[BIRP]", "", man.replace("\\-", "-"))


def mentions(word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


commands = help_commands()
check("--help lists the commands", set(commands) >= {"analyze", "diff", "segments", "timeline", "export"}, commands)
for opt in sorted(help_options([])):
    check("man page: memsnap " + opt, mentions(opt))
for cmd in commands:
    check("man page synopsis: " + cmd, re.search(r"^\.B memsnap " + cmd + "$", man, re.M) is not None)
    check("man page COMMANDS: " + cmd, re.search(r"^\.TP\n\.B " + cmd + "$", man, re.M) is not None)
    opts = help_options([cmd])
    check(cmd + " --help has options", len(opts) >= 3, opts)
    for opt in sorted(opts):
        check("man page: %s %s" % (cmd, opt), mentions(opt))

# --- completions: generated from the same definition --------------------------------------------------
with tempfile.TemporaryDirectory() as tmp:
    bash_file, zsh_file = os.path.join(tmp, "memsnap.bash"), os.path.join(tmp, "_memsnap")
    rc, so, se = run(["completions", "bash", "-o", bash_file])
    check("completions bash", rc == 0 and so == "" and se == "", "%d %r" % (rc, se))
    rc, so, se = run(["completions", "zsh", "-o", zsh_file])
    check("completions zsh", rc == 0 and so == "" and se == "", "%d %r" % (rc, se))
    fish_file = os.path.join(tmp, "memsnap.fish")
    rc, so, se = run(["completions", "fish", "-o", fish_file])
    check("completions fish", rc == 0 and so == "" and se == "", "%d %r" % (rc, se))
    rc, so, se = run(["completions", "tcsh"])
    check("completions tcsh refused", rc == 2 and "tcsh" in se, "%d %r" % (rc, se))
    rc, so, se = run(["--help"])
    check("completions is hidden from --help", "completions" not in so, so)
    bash_text = open(bash_file).read()
    for cmd in commands:
        check("bash knows " + cmd, cmd in bash_text)
        for opt in help_options([cmd]):
            check("bash knows %s %s" % (cmd, opt), re.search(r"[\s\"|]" + re.escape(opt) + r"[\s\"|)]", bash_text)
                  is not None)
    check("bash -n", subprocess.run(["bash", "-n", bash_file]).returncode == 0)

    def bash_complete(*words):
        script = 'source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; _memsnap; printf "%%s\\n" "${COMPREPLY[@]}"' % (
            bash_file, " ".join("'%s'" % w for w in words), len(words) - 1)
        p = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp)
        return sorted(x for x in p.stdout.split("\n") if x)

    check("bash: commands", bash_complete("memsnap", "ex") == ["export"], bash_complete("memsnap", "ex"))
    check("bash: options", bash_complete("memsnap", "export", "--fr") == ["--from", "--from-time"],
          bash_complete("memsnap", "export", "--fr"))
    check("bash: choices", bash_complete("memsnap", "export", "--format", "") == ["json", "perfetto", "pickle"],
          bash_complete("memsnap", "export", "--format", ""))
    check("bash: a value is not a file", bash_complete("memsnap", "export", "--last", "") == [])
    check("bash: files", bash_complete("memsnap", "analyze", "memsnap.b") == ["memsnap.bash"],
          bash_complete("memsnap", "analyze", "memsnap.b"))

    zsh = shutil.which("zsh")
    if not zsh:
        skip("zsh is not installed (the zsh script is only generated)")
    else:
        check("zsh -n", subprocess.run([zsh, "-n", zsh_file]).returncode == 0)
        fdir = os.path.join(tmp, "fpath")
        os.mkdir(fdir)
        shutil.copy(zsh_file, fdir)
        driver = os.path.join(tmp, "drive.zsh")
        # Type a line into an interactive zsh on a pseudo-terminal, press TAB, print the line.
        # Each step waits for zsh's own output (the prompt, then the echoed line), not for a fixed time.
        with open(driver, "w") as f:
            f.write("""zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z 'PS1="RE""ADY> "; fpath=(%s $fpath); autoload -Uz compinit; compinit -u -D; setopt nobeep'
zpty -r z out '*READY> *'
zpty -w -n z "$1"$'\\t'
zpty -w -n z $'\\C-a echo RESULT: \\C-m'
zpty -r z out "*"$'\\n'"RESULT:*"$'\\n'"*"
zpty -d z
print -r -- "$out" | tr -d '\\r' | grep -a "^RESULT:" | tail -1
""" % fdir)
        for typed, want in (("memsnap exp", "memsnap export"), ("memsnap export --format pi", "--format pickle")):
            got = ""
            try:
                got = subprocess.run([zsh, "-f", driver, typed], stdout=subprocess.PIPE, text=True,
                                     timeout=60).stdout
            except subprocess.TimeoutExpired:
                got = "(no answer from zsh in 60 s)"
            check("zsh completes %r" % typed, want in got, repr(got))

    fish = shutil.which("fish")
    if not fish:
        skip("fish is not installed (the fish script is only generated)")
    else:
        check("fish -n", subprocess.run([fish, "--no-execute", fish_file]).returncode == 0)

        def fish_complete(line):
            # fish's own completion engine on a typed line: the candidates, without descriptions.
            p = subprocess.run([fish, "--no-config", "-c", "source %s; complete -C %s" % (fish_file, shlex.quote(line))],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp, timeout=60)
            return sorted(l.split("\t")[0] for l in p.stdout.splitlines())

        for typed, want in (("memsnap ex", ["export"]), ("memsnap export --fr", ["--from", "--from-time"]),
                            ("memsnap export --format ", ["json", "perfetto", "pickle"]),
                            ("memsnap export --last ", []), ("memsnap analyze memsnap.f", ["memsnap.fish"]),
                            ("memsnap segments --to", ["--top"])):
            got = fish_complete(typed)
            check("fish completes %r" % typed, got == want, got)

    # --- cmake --install: binary, manual page, completions -------------------------------------------
    prefix = os.path.join(tmp, "prefix")
    p = subprocess.run([CMAKE, "--install", BUILD, "--prefix", prefix], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check("cmake --install", p.returncode == 0, p.stderr)
    for rel in ("bin/memsnap", "share/man/man1/memsnap.1", "share/bash-completion/completions/memsnap",
                "share/zsh/site-functions/_memsnap", "share/fish/vendor_completions.d/memsnap.fish"):
        check("installed " + rel, os.path.isfile(os.path.join(prefix, rel)), os.listdir(prefix))
    installed = os.path.join(prefix, "bin", "memsnap")
    if os.path.isfile(installed):
        v = subprocess.run([installed, "--version"], stdout=subprocess.PIPE, text=True)
        check("installed binary runs", v.returncode == 0 and v.stdout.startswith("memsnap "), v.stdout)
        same = open(os.path.join(prefix, "share/bash-completion/completions/memsnap")).read() == bash_text
        check("installed bash completion is the generated one", same)

finish()
