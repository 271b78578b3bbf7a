//! Where `wazap-stdio` finds its upstream: `WAZAP_URL` and `WAZAP_TOKEN` from the environment,
//! else from a config file (`WAZAP_STDIO_CONFIG`, or `wazap/stdio.env` under the user's config
//! directory). Never from command-line arguments: any user of the machine can read those in the
//! process list.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use wazap_shared::config::Source;

/// `WAZAP_URL`: the wazap server's `/mcp` URL.
pub(crate) const URL: &str = "WAZAP_URL";
/// `WAZAP_TOKEN`: the AI connection's bearer token.
pub(crate) const TOKEN: &str = "WAZAP_TOKEN";
/// `WAZAP_STDIO_CONFIG`: the config file to read instead of the default one.
pub(crate) const CONFIG_FILE: &str = "WAZAP_STDIO_CONFIG";

/// The default config file, relative to the user's config directory.
const DEFAULT_FILE: &str = "wazap/stdio.env";

/// What `wazap-stdio` needs to reach its upstream.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    /// The upstream `/mcp` URL (`http://` or `https://`).
    pub(crate) url: String,
    /// The bearer token, without the `Bearer ` prefix.
    pub(crate) token: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a credential: never in logs, panics or debug output.
        f.debug_struct("Config")
            .field("url", &self.url)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// Why no usable configuration was found; the message names the variable or file, never a value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither the environment nor the config file sets `var`.
    #[error("{var} is not set: set it in the environment or in {file}")]
    Missing {
        /// The variable.
        var: &'static str,
        /// The config file that was consulted (or would have been).
        file: String,
    },
    /// `var` is set to something unusable.
    #[error("{var}: {expected}")]
    Invalid {
        /// The variable.
        var: &'static str,
        /// What a good value looks like.
        expected: &'static str,
    },
    /// The config file named by `WAZAP_STDIO_CONFIG` cannot be read, or has a bad line.
    #[error("config file {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What is wrong with it (never a value from it).
        reason: String,
    },
}

impl Config {
    /// Read the configuration: each variable from `env` when set there, else from the config
    /// file. An explicitly named file must exist; the default one may be absent.
    pub fn load(env: &impl Source) -> Result<Self, ConfigError> {
        let explicit = non_empty(env.get(CONFIG_FILE)).map(PathBuf::from);
        let path = explicit.clone().or_else(|| default_file(env));
        let file_label = path
            .as_deref()
            .map_or_else(|| DEFAULT_FILE.to_owned(), |p| p.display().to_string());
        let mut url = non_empty(env.get(URL));
        let mut token = non_empty(env.get(TOKEN));
        if url.is_none() || token.is_none() {
            let file = match &path {
                Some(p) => read_file(p, explicit.is_some())?,
                None => HashMap::new(),
            };
            url = url.or_else(|| file.get(URL).cloned());
            token = token.or_else(|| file.get(TOKEN).cloned());
        }
        let missing = |var| ConfigError::Missing {
            var,
            file: file_label.clone(),
        };
        let url = url.ok_or_else(|| missing(URL))?;
        let token = token.ok_or_else(|| missing(TOKEN))?;
        Self::new(url, token)
    }

    /// Check and normalise the two values.
    fn new(url: String, token: String) -> Result<Self, ConfigError> {
        let url = url.trim().to_owned();
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.contains(' ') {
            return Err(ConfigError::Invalid {
                var: URL,
                expected: "expected the server's MCP URL, e.g. http://127.0.0.1:8080/mcp",
            });
        }
        let token = token.trim();
        let token = token.strip_prefix("Bearer ").unwrap_or(token).trim();
        if token.is_empty() || !token.chars().all(|c| c.is_ascii_graphic()) {
            return Err(ConfigError::Invalid {
                var: TOKEN,
                expected: "expected the connection's bearer token (printable, no spaces)",
            });
        }
        Ok(Self {
            url,
            token: token.to_owned(),
        })
    }

    /// Whether the token would cross a network in clear text (plain http to a host that is not
    /// this machine).
    pub(crate) fn cleartext_remote(&self) -> bool {
        let Some(rest) = self.url.strip_prefix("http://") else {
            return false;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => authority.split(':').next().unwrap_or_default(),
        };
        !(host == "localhost" || host == "::1" || host.starts_with("127."))
    }
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// `$XDG_CONFIG_HOME/wazap/stdio.env`, else `$HOME/.config/wazap/stdio.env`.
fn default_file(env: &impl Source) -> Option<PathBuf> {
    let base = non_empty(env.get("XDG_CONFIG_HOME"))
        .map(PathBuf::from)
        .or_else(|| non_empty(env.get("HOME")).map(|h| Path::new(&h).join(".config")))?;
    Some(base.join(DEFAULT_FILE))
}

/// The `KEY=value` lines of `path` (blank lines and `#` comments skipped, one pair of quotes
/// around a value removed). Only `WAZAP_URL` and `WAZAP_TOKEN` may appear.
fn read_file(path: &Path, required: bool) -> Result<HashMap<&'static str, String>, ConfigError> {
    let label = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok(HashMap::new());
        }
        Err(e) => {
            return Err(ConfigError::File {
                path: label,
                reason: format!("cannot be read ({})", e.kind()),
            });
        }
    };
    warn_if_shared(path);
    parse(&text).map_err(|reason| ConfigError::File {
        path: label,
        reason,
    })
}

/// Parse the file's text; an error names the line, never its value.
fn parse(text: &str) -> Result<HashMap<&'static str, String>, String> {
    let mut values = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("line {}: expected KEY=value", n + 1));
        };
        let key = match key.trim() {
            URL => URL,
            TOKEN => TOKEN,
            _ => {
                return Err(format!(
                    "line {}: unknown key (expected {URL} or {TOKEN})",
                    n + 1
                ));
            }
        };
        let value = value.trim();
        let value = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        values.insert(key, value.to_owned());
    }
    Ok(values)
}

/// The file holds a credential: say so when other users of the machine may read it.
fn warn_if_shared(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                file = %path.display(),
                "the config file holds a token but other users may read it; chmod 600 it"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&'static str, &'static str)]) -> HashMap<&'static str, &'static str> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn environment_wins_and_a_bearer_prefix_is_dropped() {
        let c = Config::load(&env(&[
            (URL, "http://127.0.0.1:8080/mcp"),
            (TOKEN, "Bearer abc.def"),
            (CONFIG_FILE, "/nonexistent/never/read"),
        ]))
        .unwrap();
        assert_eq!(c.url, "http://127.0.0.1:8080/mcp");
        assert_eq!(c.token, "abc.def");
        assert!(!format!("{c:?}").contains("abc.def"));
    }

    #[test]
    fn the_file_fills_what_the_environment_leaves_out() {
        let dir = std::env::temp_dir().join(format!("wazap-stdio-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("stdio.env");
        std::fs::write(
            &file,
            "# wazap\nWAZAP_URL=\"https://wazap.example/mcp\"\n\nexport WAZAP_TOKEN=tok\n",
        )
        .unwrap();
        let path = file.to_str().unwrap().to_owned();
        let map: HashMap<String, String> = [(CONFIG_FILE.to_owned(), path.clone())].into();
        let c = Config::load(&map).unwrap();
        assert_eq!(c.url, "https://wazap.example/mcp");
        assert_eq!(c.token, "tok");
        let map: HashMap<String, String> = [
            (CONFIG_FILE.to_owned(), path),
            (TOKEN.to_owned(), "from-env".to_owned()),
        ]
        .into();
        assert_eq!(Config::load(&map).unwrap().token, "from-env");
        std::fs::write(&file, "WAZAP_URL=http://x/mcp\nWAZAP_TOKN=secret\n").unwrap();
        let map: HashMap<String, String> =
            [(CONFIG_FILE.to_owned(), file.to_str().unwrap().to_owned())].into();
        let e = Config::load(&map).unwrap_err().to_string();
        assert!(e.contains("line 2") && !e.contains("secret"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_and_bad_values_name_the_variable_only() {
        let e = Config::load(&env(&[
            (URL, "http://127.0.0.1:1/mcp"),
            ("HOME", "/nonexistent"),
        ]))
        .unwrap_err();
        assert!(matches!(e, ConfigError::Missing { var: TOKEN, .. }), "{e}");
        let e = Config::load(&env(&[(CONFIG_FILE, "/nonexistent/stdio.env")])).unwrap_err();
        assert!(matches!(e, ConfigError::File { .. }), "{e}");
        let e = Config::load(&env(&[(URL, "ftp://secret-host"), (TOKEN, "t")])).unwrap_err();
        assert!(!e.to_string().contains("secret-host"), "{e}");
        let e = Config::load(&env(&[(URL, "http://h/mcp"), (TOKEN, "two words")])).unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { var: TOKEN, .. }));
    }

    #[test]
    fn cleartext_is_flagged_only_off_this_machine() {
        let c = |url: &str| Config::new(url.into(), "t".into()).unwrap();
        assert!(!c("http://127.0.0.1:8080/mcp").cleartext_remote());
        assert!(!c("http://localhost/mcp").cleartext_remote());
        assert!(!c("http://[::1]:8080/mcp").cleartext_remote());
        assert!(!c("https://wazap.example/mcp").cleartext_remote());
        assert!(c("http://192.0.2.1:8080/mcp").cleartext_remote());
    }
}
