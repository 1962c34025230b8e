//! `synlab completions SHELL` and `synlab man`: what a shell and man do with their output.

use std::process::Command;

fn synlab(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "synlab {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completion_loads_and_completes_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("synlab.bash");
    std::fs::write(&script, synlab(&["completions", "bash"])).unwrap();
    // Load it, then ask it what follows `synlab ` and `synlab run --`, as bash would on Tab.
    let probe = format!(
        "source {}; complete -p synlab; \
         COMP_WORDS=(synlab ''); COMP_CWORD=1; COMP_LINE='synlab '; COMP_POINT=7; \
         _synlab synlab '' synlab; echo \"subcommands: ${{COMPREPLY[*]}}\"; \
         COMP_WORDS=(synlab run --); COMP_CWORD=2; COMP_LINE='synlab run --'; COMP_POINT=13; \
         _synlab synlab -- run; echo \"run flags: ${{COMPREPLY[*]}}\"",
        script.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "bash: {out:?}");
    assert!(text.contains("-F _synlab synlab"), "{text}");
    let subs = text
        .lines()
        .find(|l| l.starts_with("subcommands:"))
        .unwrap();
    for s in [
        "tui",
        "run",
        "check",
        "report",
        "compare",
        "completions",
        "man",
    ] {
        assert!(
            subs.split_whitespace().any(|w| w == s),
            "{s} missing: {subs}"
        );
    }
    assert!(
        !subs.contains("worker"),
        "hidden subcommands stay hidden: {subs}"
    );
    let flags = text.lines().find(|l| l.starts_with("run flags:")).unwrap();
    for f in ["--quick", "--junit", "--metrics"] {
        assert!(flags.contains(f), "{f} missing: {flags}");
    }
}

#[test]
fn zsh_and_fish_scripts_name_the_subcommands() {
    let zsh = synlab(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef synlab"), "{zsh}");
    let fish = synlab(&["completions", "fish"]);
    assert!(fish.contains("complete -c synlab"), "{fish}");
    for s in ["run", "check", "compare"] {
        assert!(zsh.contains(&format!("'{s}:")), "zsh lacks {s}");
        assert!(fish.contains(&format!("-a \"{s}\"")), "fish lacks {s}");
    }
}

#[test]
fn man_page_renders_with_man() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("synlab.1");
    std::fs::write(&page, synlab(&["man"])).unwrap();
    let out = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("man (Debian: apt-get install man-db)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "man -l: {out:?}");
    for s in [
        "NAME",
        "synlab",
        "SYNOPSIS",
        "SUBCOMMANDS",
        "completions",
        "compare",
    ] {
        assert!(text.contains(s), "`{s}` not in the rendered page:\n{text}");
    }
}
