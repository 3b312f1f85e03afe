//! Secrets kept out of the YAML: a password or hash may be given as itself, or named by
//! `…_env` (an environment variable) or `…_file` (a file whose content, less one trailing newline,
//! is the secret), so a configuration can be committed without them. Resolved once when the
//! configuration is read; the rest of idgate sees only the plain fields.

use serde_saphyr::Location;

use super::validate::at;
use super::{Config, ConfigError};

/// Where one secret comes from: `literal`, `env` or `file`, at most one of them.
struct Source<'a> {
    /// The key the literal is given under (`password`), for messages.
    key: &'a str,
    literal: &'a Option<String>,
    env: &'a Option<String>,
    file: &'a Option<String>,
}

impl Source<'_> {
    /// The secret, if any source is set; an error names the entry and what to fix.
    fn resolve(&self, owner: &str, loc: &Location) -> Result<Option<String>, ConfigError> {
        let key = self.key;
        let given = [
            self.literal.is_some(),
            self.env.is_some(),
            self.file.is_some(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(at(
                loc,
                format!("{owner}: give one of {key}, {key}_env and {key}_file"),
            ));
        }
        if let Some(v) = self.literal {
            return Ok(Some(v.clone()));
        }
        if let Some(var) = self.env {
            return match std::env::var(var) {
                Ok(v) => Ok(Some(v)),
                Err(_) => Err(at(
                    loc,
                    format!("{owner}: {key}_env names `{var}`, which is not set in idgate's environment"),
                )),
            };
        }
        if let Some(path) = self.file {
            return match std::fs::read_to_string(path) {
                Ok(v) => {
                    let v = v.strip_suffix('\n').unwrap_or(&v);
                    Ok(Some(v.strip_suffix('\r').unwrap_or(v).to_string()))
                }
                Err(e) => Err(at(
                    loc,
                    format!("{owner}: cannot read {key}_file `{path}`: {e}"),
                )),
            };
        }
        Ok(None)
    }
}

/// Fills every plain secret field from its `_env` or `_file` sibling.
pub(super) fn resolve(cfg: &mut Config) -> Result<(), ConfigError> {
    for (name, b) in cfg.backends.iter_mut() {
        let loc = b.referenced;
        let v = &mut b.value;
        let owner = format!("backend `{name}`");
        let literal = (!v.password.is_empty()).then(|| v.password.clone());
        let src = Source {
            key: "password",
            literal: &literal,
            env: &v.password_env,
            file: &v.password_file,
        };
        v.password = src.resolve(&owner, &loc)?.unwrap_or_default();
    }
    for u in cfg.users.iter_mut() {
        let loc = u.referenced;
        let user = &mut u.value;
        let owner = format!("user `{}`", user.name);
        let src = Source {
            key: "password_hash",
            literal: &user.password_hash,
            env: &user.password_hash_env,
            file: &user.password_hash_file,
        };
        user.password_hash = src.resolve(&owner, &loc)?;
        let src = Source {
            key: "caching_sha2_hash",
            literal: &user.caching_sha2_hash,
            env: &user.caching_sha2_hash_env,
            file: &user.caching_sha2_hash_file,
        };
        user.caching_sha2_hash = src.resolve(&owner, &loc)?;
        let accounts = user
            .backend_account
            .iter_mut()
            .map(|a| (format!("{owner}, backend_account"), a))
            .chain(
                user.backend_accounts
                    .iter_mut()
                    .map(|(b, a)| (format!("{owner}, backend_accounts.{b}"), a)),
            );
        for (owner, a) in accounts {
            let src = Source {
                key: "password",
                literal: &a.password,
                env: &a.password_env,
                file: &a.password_file,
            };
            a.password = Some(src.resolve(&owner, &loc)?.unwrap_or_default());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra_user: &str, backend_pw: &str) -> String {
        format!(
            "users:\n  - name: app\n    password_hash: \"\"\n{extra_user}backends:\n  b:\n    user: idgate\n{backend_pw}default_backend: b\n"
        )
    }

    #[test]
    fn secrets_come_from_the_environment_or_a_file() {
        let dir = std::env::temp_dir().join(format!("idgate-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw");
        std::fs::write(&file, "from-file\n").unwrap();
        std::env::set_var("IDGATE_TEST_SECRET_PW", "from-env");
        let text = cfg(
            &format!(
                "    backend_account:\n      user: app_rw\n      password_file: {}\n",
                file.display()
            ),
            "    password_env: IDGATE_TEST_SECRET_PW\n",
        );
        let c = Config::from_yaml(&text).unwrap();
        assert_eq!(c.backends["b"].value.password, "from-env");
        let acct = c.users[0].value.backend_account.as_ref().unwrap();
        assert_eq!(acct.password.as_deref(), Some("from-file"));
        // Shown with check-config, the secrets are masked.
        let shown = c.to_effective_yaml();
        assert!(
            !shown.contains("from-env") && !shown.contains("from-file"),
            "{shown}"
        );
    }

    #[test]
    fn hashes_come_from_the_environment_or_a_file() {
        let sha = "A".repeat(64);
        std::env::set_var("IDGATE_TEST_SECRET_SHA2", &sha);
        let text = cfg("    caching_sha2_hash_env: IDGATE_TEST_SECRET_SHA2\n", "");
        let c = Config::from_yaml(&text.replace("    password_hash: \"\"\n", "")).unwrap();
        assert_eq!(
            c.users[0].value.caching_sha2_hash.as_deref(),
            Some(sha.as_str())
        );
        assert!(!c.to_effective_yaml().contains(&sha));
    }

    #[test]
    fn a_missing_secret_is_an_error_at_its_entry() {
        let text = cfg(
            "",
            "    password_env: IDGATE_TEST_SECRET_NOT_SET_ANYWHERE\n",
        );
        let e = Config::from_yaml(&text).unwrap_err().to_string();
        assert!(
            e.contains("line 6") && e.contains("IDGATE_TEST_SECRET_NOT_SET_ANYWHERE"),
            "{e}"
        );
        let text = cfg(
            "",
            "    password: x\n    password_file: /nonexistent/idgate-pw\n",
        );
        let e = Config::from_yaml(&text).unwrap_err().to_string();
        assert!(
            e.contains("give one of password, password_env and password_file"),
            "{e}"
        );
        let text = cfg("", "    password_file: /nonexistent/idgate-pw\n");
        let e = Config::from_yaml(&text).unwrap_err().to_string();
        assert!(
            e.contains("cannot read password_file `/nonexistent/idgate-pw`"),
            "{e}"
        );
    }
}
