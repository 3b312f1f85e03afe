//! `log_level`: checked here so a reload with a filter that does not parse is refused whole.

use super::{Config, ConfigError};

pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
    if let Some(l) = &cfg.log_level {
        tracing_subscriber::EnvFilter::try_new(l).map_err(|e| {
            ConfigError::Yaml(format!(
                "log_level: `{l}` is not a log filter ({e}); use a level such as `info` or \
                 directives such as `info,idgate=debug`"
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn a_bad_filter_is_named() {
        let y = |l: &str| {
            format!(
                "log_level: \"{l}\"\nusers:\n  - name: app\n    password_hash: \"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7\"\n\
                 backends:\n  main:\n    user: u\ndefault_backend: main\n"
            )
        };
        if let Err(e) = Config::from_yaml(&y("idgate=debug,info")) {
            panic!("{e}");
        }
        let e = Config::from_yaml(&y("idgate=loud")).expect_err("bad level");
        assert!(e.to_string().contains("log_level"), "{e}");
    }
}
