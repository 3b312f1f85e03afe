//! Reading the documentation book for its tests: pages, links, heading ids and code blocks
//! (with pulldown-cmark, as mdBook reads them), running `idgate check-config`, and the keys the
//! configuration schema accepts, found by asking the schema itself: a configuration with an
//! unknown key at some place is refused with the list of keys that place takes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One page of the book: its path under `docs/src` and its text.
pub struct Page {
    pub rel: PathBuf,
    pub text: String,
}

pub fn pages() -> Vec<Page> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<Page>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read docs/src")
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(&p, base, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(Page {
                    rel: p.strip_prefix(base).unwrap().to_path_buf(),
                    text: std::fs::read_to_string(&p).unwrap(),
                });
            }
        }
    }
    let base = root().join("docs/src");
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Every link's destination, with its line.
pub fn links(text: &str) -> Vec<(String, usize)> {
    Parser::new(text)
        .into_offset_iter()
        .filter_map(|(e, r)| match e {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some((dest_url.to_string(), line_of(text, r.start)))
            }
            _ => None,
        })
        .collect()
}

/// The ids mdBook gives the page's headings: lower case, spaces as `-`, only letters, digits,
/// `-` and `_` kept; a repeated id gets `-1`, `-2`, ….
pub fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut current: Option<String> = None;
    for e in Parser::new(text) {
        match e {
            Event::Start(Tag::Heading { .. }) => current = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = current.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let title = current.take().unwrap_or_default();
                let base: String = title
                    .trim()
                    .chars()
                    .filter_map(|c| match c {
                        ' ' => Some('-'),
                        c if c.is_alphanumeric() || c == '_' || c == '-' => {
                            Some(c.to_lowercase().next().unwrap_or(c))
                        }
                        _ => None,
                    })
                    .collect();
                let mut id = base.clone();
                let mut n = 1;
                while ids.contains(&id) {
                    id = format!("{base}-{n}");
                    n += 1;
                }
                ids.insert(id);
            }
            _ => {}
        }
    }
    ids
}

/// The fenced code blocks whose language is `lang`, with the line they start on.
pub fn code_blocks(text: &str, lang: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut current: Option<(String, usize)> = None;
    for (e, r) in Parser::new(text).into_offset_iter() {
        match e {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let first = info.split([',', ' ']).next().unwrap_or("");
                if first == lang {
                    current = Some((String::new(), line_of(text, r.start)));
                }
            }
            Event::Text(t) => {
                if let Some((b, _)) = current.as_mut() {
                    b.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(b) = current.take() {
                    out.push(b);
                }
            }
            _ => {}
        }
    }
    out
}

/// `idgate check-config` on `path`: whether it passed, and what it printed on stderr. The
/// variables the file names in `…_env:` keys are set, as a deployment would set them.
pub fn check_config(path: &Path) -> (bool, String) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_idgate"));
    for (at, _) in text.match_indices("_env:") {
        let name: String = text[at + 5..]
            .trim_start_matches([' ', '"', '\''])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            cmd.env(name, "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7");
        }
    }
    let out = cmd
        .args(["check-config", "--config"])
        .arg(path)
        .current_dir(root())
        .output()
        .expect("run idgate check-config");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every key the schema accepts, as the reference names them: `users[].name`,
/// `backends.NAME.pool.max_idle`, `generators.NAME.step` (the fields of every kind together).
pub struct Schema {
    pub keys: BTreeSet<String>,
}

impl Schema {
    pub fn contains(&self, k: &str) -> bool {
        self.keys.contains(k)
    }

    pub fn accepts(&self, k: &str) -> bool {
        self.keys.contains(k)
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.keys.fmt(f)
    }
}

/// How a probe nests: a field, an item of a list, an entry of a map.
#[derive(Clone)]
enum Step {
    Field(String),
    Item,
    Entry,
}

/// What the schema says about the map written at a place.
enum Shape {
    Fields(Vec<String>),
    /// An internally tagged enum: the tag's name and its values.
    Tagged(String, Vec<String>),
    Other,
}

const PROBE: &str = "idgate_probe";

/// A document putting the map `{entries}` at `path`.
fn document(path: &[Step], entries: &str) -> String {
    let mut v = format!("{{{entries}}}");
    for s in path.iter().rev() {
        v = match s {
            Step::Field(f) => format!("{{{f}: {v}}}"),
            Step::Item => format!("[{v}]"),
            Step::Entry => format!("{{name: {v}}}"),
        };
    }
    v
}

fn refusal(path: &[Step], entries: &str) -> String {
    let dir = std::env::temp_dir().join(format!("idgate-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("probe.yaml");
    std::fs::write(&file, document(path, entries)).unwrap();
    let (ok, err) = check_config(&file);
    if ok {
        String::new()
    } else {
        err
    }
}

/// The names after "expected" in a serde message: `one of a, b, c`, `a or b`, `a`.
fn expected_names(msg: &str, after: &str) -> Option<Vec<String>> {
    let at = msg.find(after)? + after.len();
    let rest = msg[at..].lines().next()?.trim();
    if rest.starts_with("there are no fields") {
        return Some(Vec::new());
    }
    let rest = rest.strip_prefix("expected ")?;
    let rest = rest.strip_prefix("one of").unwrap_or(rest).trim_start();
    Some(
        rest.split(", ")
            .flat_map(|p| p.split(" or "))
            .map(|n| n.trim().trim_matches('`').to_string())
            .filter(|n| !n.is_empty())
            .collect(),
    )
}

fn shape(path: &[Step], prefix: &str) -> Shape {
    let err = refusal(path, &format!("{prefix}{PROBE}: 1"));
    if let Some(f) = expected_names(&err, &format!("unknown field `{PROBE}`, ")) {
        return Shape::Fields(f);
    }
    if let Some(at) = err.find("missing field `") {
        let tag: String = err[at + 15..].chars().take_while(|c| *c != '`').collect();
        let err = refusal(path, &format!("{tag}: {PROBE}"));
        if let Some(v) = expected_names(&err, &format!("unknown variant `{PROBE}`, ")) {
            return Shape::Tagged(tag, v);
        }
    }
    Shape::Other
}

fn walk(path: &[Step], name: &str, prefix: &str, keys: &mut BTreeSet<String>, depth: usize) {
    let fields = match shape(path, prefix) {
        Shape::Fields(f) => f,
        Shape::Tagged(tag, variants) => {
            keys.insert(format!("{name}{tag}"));
            for v in variants {
                walk(path, name, &format!("{tag}: {v}, "), keys, depth);
            }
            return;
        }
        Shape::Other => return,
    };
    for f in fields {
        if prefix.split(':').next() == Some(f.as_str()) {
            continue; // the tag, listed once above
        }
        keys.insert(format!("{name}{f}"));
        if depth >= 5 {
            continue;
        }
        let mut p = path.to_vec();
        p.push(Step::Field(f.clone()));
        for (last, suffix) in [
            (None, "."),
            (Some(Step::Item), "[]."),
            (Some(Step::Entry), ".NAME."),
        ] {
            let mut q = p.clone();
            if let Some(s) = last {
                q.push(s);
            }
            if !matches!(shape(&q, ""), Shape::Other) {
                walk(&q, &format!("{name}{f}{suffix}"), "", keys, depth + 1);
                break;
            }
        }
    }
}

pub fn schema_keys() -> Schema {
    let mut keys = BTreeSet::new();
    walk(&[], "", "", &mut keys, 0);
    Schema { keys }
}

/// The keys in the first column of the reference's tables, and those listed more than once.
/// A cell may name several: `users[].password_hash_env` / `password_hash_file` — a bare name
/// after a dotted one shares its parent.
pub fn reference_keys(text: &str) -> (BTreeSet<String>, Vec<String>) {
    let mut seen = BTreeSet::new();
    let mut twice = Vec::new();
    for line in text.lines() {
        let Some(cell) = line.strip_prefix("| `") else {
            continue;
        };
        let cell = format!("`{}", cell.split(" |").next().unwrap_or(""));
        let mut parent = String::new();
        for (i, piece) in cell.split('`').enumerate() {
            if i % 2 == 0 || piece.is_empty() {
                continue;
            }
            let key = if piece.contains('.') || piece.contains('[') {
                let cut = piece.rfind('.').map_or(0, |d| d + 1);
                parent = piece[..cut].to_string();
                piece.to_string()
            } else {
                format!("{parent}{piece}")
            };
            if !seen.insert(key.clone()) {
                twice.push(key);
            }
        }
    }
    (seen, twice)
}
