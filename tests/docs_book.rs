//! The documentation book (`docs/`, mdBook) cannot drift from idgate: it builds, every page is
//! in its summary, every link between pages (and from the README into it) lands on a page and
//! heading that exist, every YAML block passes `idgate check-config`, and the configuration
//! reference lists exactly the keys the configuration schema accepts, each once.

mod docs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use docs::{pages, root, Page};

#[test]
fn the_book_builds_and_every_page_is_in_its_summary() {
    let out = std::env::temp_dir().join(format!("idgate-book-{}", std::process::id()));
    let mut book = mdbook_driver::MDBook::load(root().join("docs")).expect("load the book");
    book.config.build.build_dir = out.clone();
    book.build().expect("build the book");
    assert!(out.join("index.html").exists() || out.join("html/index.html").exists());
    let _ = std::fs::remove_dir_all(&out);

    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = docs::links(&summary)
        .into_iter()
        .map(|(dest, _)| dest)
        .collect();
    for p in pages() {
        if p.rel != Path::new("SUMMARY.md") {
            let rel = p.rel.to_string_lossy().into_owned();
            assert!(listed.contains(&rel), "{rel} is not in SUMMARY.md");
        }
    }
}

#[test]
fn links_land_on_pages_and_headings_that_exist() {
    let all = pages();
    let anchors: BTreeMap<PathBuf, BTreeSet<String>> = all
        .iter()
        .map(|p| {
            (
                root().join("docs/src").join(&p.rel),
                docs::heading_ids(&p.text),
            )
        })
        .collect();
    let readme = Page {
        rel: PathBuf::from("../../README.md"),
        text: std::fs::read_to_string(root().join("README.md")).unwrap(),
    };
    let mut broken = Vec::new();
    for p in all.iter().chain(std::iter::once(&readme)) {
        let here = root().join("docs/src").join(&p.rel);
        let dir = here.parent().unwrap().to_path_buf();
        for (dest, line) in docs::links(&p.text) {
            if dest.contains("://") || dest.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match dest.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (dest.as_str(), None),
            };
            let target = if file.is_empty() {
                here.clone()
            } else {
                normalize(&dir.join(file))
            };
            let where_ = format!("{}:{line}: {dest}", p.rel.display());
            if !target.exists() {
                broken.push(format!("{where_}: no such file"));
                continue;
            }
            if let Some(a) = anchor {
                match anchors.get(&target) {
                    Some(ids) if ids.contains(a) => {}
                    Some(_) => broken.push(format!("{where_}: no heading with id `{a}`")),
                    None => {
                        broken.push(format!("{where_}: an anchor into a file outside the book"))
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A configuration every YAML block of the book is laid over: a block's top-level keys replace
/// these, so a block may show only the keys it is about.
const BASE: &str = "listen: 127.0.0.1:3307
allow_plaintext_passwords: true
users:
  - name: app
    password: secret
backends:
  main: {host: 127.0.0.1, port: 3306, user: idgate, password: secret}
  shard0: {host: 127.0.0.1, port: 3306, user: idgate, password: secret}
  shard1: {host: 127.0.0.1, port: 3307, user: idgate, password: secret}
  shard2: {host: 127.0.0.1, port: 3308, user: idgate, password: secret}
  shard3: {host: 127.0.0.1, port: 3309, user: idgate, password: secret}
default_backend: main
";

/// `block` laid over [`BASE`]: every top-level key of the block replaces the base's, but for
/// `backends`, whose entries join the base's (an example about one backend keeps the others).
fn over_base(block: &str) -> String {
    let (block, extra_backends) = take_backends(block);
    let top = |text: &str| -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| {
                let (k, _) = l.split_once(':')?;
                (!l.starts_with([' ', '#', '-']) && !k.contains(' ')).then(|| k.to_string())
            })
            .collect()
    };
    let replaced = top(&block);
    // A backend the block names replaces the base's of that name (one line each there).
    let named: BTreeSet<&str> = extra_backends
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.trim().split_once(':').map(|(n, _)| n))
        .collect();
    let mut out = String::new();
    let mut keep = true;
    for l in BASE.lines() {
        if l.starts_with("  ")
            && l.trim()
                .split_once(':')
                .is_some_and(|(n, _)| named.contains(n))
        {
            continue;
        }
        if !l.starts_with(' ') && !l.starts_with('-') {
            keep = l.split_once(':').is_none_or(|(k, _)| !replaced.contains(k));
        }
        if keep {
            out.push_str(l);
            out.push('\n');
            if l == "backends:" {
                out.push_str(&extra_backends);
            }
        }
    }
    out.push_str(&block);
    out
}

/// The block without its `backends:` section, and that section's entries (block style).
fn take_backends(block: &str) -> (String, String) {
    let (mut rest, mut entries) = (String::new(), String::new());
    let mut inside = false;
    for l in block.lines() {
        if !l.starts_with(' ') && !l.is_empty() {
            inside = l.trim_end() == "backends:";
            if inside {
                continue;
            }
        }
        let to = if inside { &mut entries } else { &mut rest };
        to.push_str(l);
        to.push('\n');
    }
    (rest, entries)
}

#[test]
fn every_yaml_block_passes_check_config() {
    let dir = std::env::temp_dir().join(format!("idgate-docs-yaml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for p in pages() {
        for (block, line) in docs::code_blocks(&p.text, "yaml") {
            checked += 1;
            let path = dir.join(format!("b{checked}.yaml"));
            let yaml = over_base(&block);
            std::fs::write(&path, &yaml).unwrap();
            let (ok, err) = docs::check_config(&path);
            if !ok {
                failures.push(format!("{}:{line}:\n{yaml}\n{err}", p.rel.display()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked >= 5, "the book lost its YAML examples ({checked})");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_configuration_reference_lists_every_key_the_schema_accepts_once() {
    let schema = docs::schema_keys();
    assert!(
        schema.contains("listen") && schema.contains("users[].name"),
        "the schema probe found {schema:?}"
    );
    let text = std::fs::read_to_string(root().join("docs/src/reference/configuration.md")).unwrap();
    let (listed, twice) = docs::reference_keys(&text);
    let missing: Vec<&String> = schema
        .keys
        .iter()
        .filter(|k| !listed.contains(*k))
        .collect();
    let unknown: Vec<&String> = listed.iter().filter(|k| !schema.accepts(k)).collect();
    assert!(
        missing.is_empty() && unknown.is_empty() && twice.is_empty(),
        "the configuration reference and the schema disagree:\n  not in the reference: \
         {missing:?}\n  not in the schema: {unknown:?}\n  listed twice: {twice:?}"
    );
}
